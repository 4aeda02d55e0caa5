
# A fresh installation of 2.1.0 (pgsentinel--2.1.0.sql) and installations
# of 1.4.0, 1.5.1 and 2.0.0 updated to it end with the same catalog: the
# same objects, columns in the same order, bodies, defaults, privileges,
# comments and configuration tables.  Both scripts are assembled from the
# same files (Makefile); what only one of them does is in sql-src/install/
# and sql-src/update/, and this test is what keeps the two equal.
#
# pg_dump --binary-upgrade dumps an extension's objects one by one (as
# pg_upgrade needs them); its OIDs, transaction ids and restrict keys differ
# between any two databases and are masked.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('fresh_update', create => 0);

sub catalog_dump
{
	my ($db) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[ 'pg_dump', '--schema-only', '--binary-upgrade',
		  '-d', $node->connstr($db) ],
		'>', \$out, '2>', \$err)
	  or die "pg_dump $db: $err";
	my @kept;
	for my $line (split /\n/, $out)
	{
		next if $line =~ /binary_upgrade_set_next_/;
		next if $line =~ /^\\(un)?restrict /;
		next if $line =~ /^-- Dumped (from|by)/;
		$line =~ s/relfrozenxid = '\d+', relminmxid = '\d+'/relfrozenxid = XID/;
		$line =~ s/WHERE oid = '\d+'/WHERE oid = OID/;
		# the configuration tables' OIDs: compared by name below
		$line =~ s/'\{[\d,]+\}'/'{OIDS}'/
		  if $line =~ /binary_upgrade_create_empty_extension/;
		push @kept, $line;
	}
	return join("\n", @kept) . "\n";
}

# Configuration tables (pg_extension_config_dump) by name, and their filters.
sub config_tables
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
		SELECT string_agg(c.relid::regclass || ' ' || coalesce(c.cond, ''), E'\n'
		                  ORDER BY c.relid::regclass::text)
		FROM pg_extension e,
		     unnest(e.extconfig, e.extcondition) AS c(relid, cond)
		WHERE e.extname = 'pgsentinel'});
}

# The first lines where two dumps differ, to say what differs.
sub first_differences
{
	my ($a, $b) = @_;
	my $dir = $node->basedir;
	open my $fa, '>', "$dir/a.sql" or die;
	print $fa $a;
	close $fa;
	open my $fb, '>', "$dir/b.sql" or die;
	print $fb $b;
	close $fb;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'diff', '-u', "$dir/a.sql", "$dir/b.sql" ],
		'>', \$out, '2>', \$err);
	my @lines = split /\n/, $out;
	splice(@lines, 60) if @lines > 60;
	return join("\n", @lines);
}

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION pgsentinel');
is($node->safe_psql('fresh',
		"SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel'"),
	'2.1.0', 'a fresh installation is of 2.1.0');
my $fresh = catalog_dump('fresh');
like($fresh, qr/CREATE FUNCTION public\.pgsentinel_report\(/,
	'the dump shows the extension\'s objects');
my $fresh_config = config_tables('fresh');
isnt($fresh_config, '', 'the fresh installation has configuration tables');

for my $from ('1.4.0', '1.5.1', '2.0.0')
{
	(my $db = "from_$from") =~ s/\./_/g;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db,
		"CREATE EXTENSION pgsentinel VERSION '$from'; ALTER EXTENSION pgsentinel UPDATE");
	my $updated = catalog_dump($db);
	my $same = $updated eq $fresh;
	ok($same, "updated from $from: the catalog of a fresh installation");
	diag(first_differences($fresh, $updated)) unless $same;
	is(config_tables($db), $fresh_config,
		"updated from $from: the same configuration tables");
}

done_testing();
