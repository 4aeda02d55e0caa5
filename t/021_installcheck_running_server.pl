
# `make installcheck` as PGXS users run it: against the running server that
# PGHOST and PGPORT name, not in a throwaway one.  A server that does not
# preload pgsentinel, or runs without the test settings, is refused before
# any test runs, with a message that says so and what to do; a server that
# includes test/pgsentinel.conf passes the isolation suite and the
# pg_regress tests but the three that take minutes of CPU (archive,
# hostile_schema, reports: they run on a throwaway server for every
# version, and here would make this file the TAP suite's longest by far).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $pg_config = $ENV{PG_CONFIG} // 'pg_config';

# A copy of what `make installcheck` reads, so that this run does not touch
# the results of the suites run in the build directory.
my $src = "$FindBin::RealBin/..";
my $copy = "$PostgreSQL::Test::Utils::tmp_check/installcheck_src";
make_path($copy);
system('sh', '-c',
	'cp -R "$1"/Makefile "$1"/pgsentinel.control "$1"/pgsentinel--*.sql "$1"/sql "$1"/expected "$1"/specs "$1"/test "$1"/prometheus "$2"/',
	'copy', $src, $copy) == 0
  or die "could not copy the tests to $copy";

# Run make installcheck in the copy against $node; returns (exit status,
# output).
sub installcheck
{
	my ($node, @args) = @_;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	# not the outer make's variables (REGRESS= ISOLATION= PGS_TEMP_INSTANCE=1)
	local $ENV{MAKEFLAGS} = '';
	local $ENV{MFLAGS} = '';
	local $ENV{MAKELEVEL} = '';
	local $ENV{MAKEOVERRIDES} = '';
	delete local $ENV{PGS_TEMP_INSTANCE};
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[ 'make', '-C', $copy, "PG_CONFIG=$pg_config", 'TAP_TESTS=', @args, 'installcheck' ],
		'<', \undef, '>', \$out, '2>', \$err);
	my $rc = $? >> 8;
	note("make installcheck @args: exit $rc\n$out$err");
	return ($rc, $out . $err);
}

# --- a server without pgsentinel preloaded ---------------------------------

my $plain = pgs_node('plain', preload => 0);
my ($rc, $out) = installcheck($plain);
isnt($rc, 0, 'no preload: make installcheck fails');
like($out, qr/pgsentinel is not loaded by the server at \S+, port \d+/,
	'no preload: the message names the server');
like($out, qr/the library must be preloaded\s+there/, 'no preload: says it must be preloaded');
like($out, qr/include '\Q$copy\E\/test\/pgsentinel\.conf'/,
	'no preload: the hint gives the line to add');
like($out, qr/PGS_TEMP_INSTANCE=1/, 'no preload: the hint gives the throwaway-server way');
unlike($out, qr/\btest setup\b|\bsetup\s+\.\.\./, 'no preload: pg_regress did not run');
is($plain->safe_psql('postgres',
		"SELECT count(*) FROM pg_database WHERE datname IN ('contrib_regression', 'isolation_regression')"),
	'0', 'no preload: no test database was created');
$plain->stop;

# --- a server that includes test/pgsentinel.conf ---------------------------

my $srv = PostgreSQL::Test::Cluster->new('running');
$srv->init;
$srv->append_conf('postgresql.conf', "include '$copy/test/pgsentinel.conf'\n");
$srv->start;

# the REGRESS list of the Makefile, less the three long tests
my ($regress) = slurp_file("$copy/Makefile") =~ /^REGRESS = (.*)$/m;
my @light = grep { !/^(archive|hostile_schema|reports)$/ } split ' ', $regress;
cmp_ok(scalar(@light), '>=', 10, 'test settings: the light pg_regress tests are listed');
($rc, $out) = installcheck($srv, 'REGRESS=' . join(' ', @light));
is($rc, 0, 'test settings: make installcheck passes');
like($out, qr/preloads pgsentinel with the test settings/, 'test settings: the check passed');
like($out, qr/All \d+ tests passed\.(?s:.*)All \d+ tests passed\./,
	'test settings: both pg_regress and isolation passed');

# One setting off: refused, naming it.
$srv->safe_psql('postgres', 'ALTER SYSTEM SET pgsentinel_ash.sampling_period = 1');
$srv->reload;
$srv->poll_query_until('postgres', "SELECT current_setting('pgsentinel_ash.sampling_period') = '1'")
  or die 'the new sampling period was not loaded';
($rc, $out) = installcheck($srv, 'ISOLATION=');
isnt($rc, 0, 'sampling period changed: make installcheck fails');
like($out, qr/pgsentinel_ash\.sampling_period = '1', the tests need '0\.01'/,
	'sampling period changed: the message names the setting');
$srv->safe_psql('postgres', 'ALTER SYSTEM RESET pgsentinel_ash.sampling_period');
$srv->reload;

# Only the TAP tests: no running server needed, no check.
($rc, $out) = installcheck($plain, 'REGRESS=', 'ISOLATION=');
is($rc, 0, 'TAP tests only: nothing to check');
unlike($out, qr/installcheck-preflight/, 'TAP tests only: the check is not run');

$srv->stop;
done_testing();
