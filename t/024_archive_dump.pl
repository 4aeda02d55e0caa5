
# pg_dump keeps the archive: a dump of the database restored into another
# one holds every archived row (samples, activities, texts, wait events,
# statements and their texts, rollups), readable through the views, and
# every partition keeps its indexes.
#
# The partitioned tables are members of the extension and CREATE EXTENSION
# creates them with their indexes on restore; attaching a dumped partition
# then creates its indexes, and pg_restore's own creation of the same
# indexes afterwards fails ("already exists", "multiple primary keys").
# Those errors, and only those, are expected: pg_restore goes on and the
# restored archive is whole; without those entries of the dump's list, a
# restore in one transaction succeeds.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('dump',
	conf => "pgsentinel_archive.interval = 200ms\n"
	  . "pgsentinel_archive.keep_one_in = 1\n");

my @tables = qw(pgsentinel_archive_batch pgsentinel_archive_session
  pgsentinel_archive_text pgsentinel_archive_wait_event
  pgsentinel_archive_statement_delta pgsentinel_archive_statement_text
  pgsentinel_rollup_minute pgsentinel_rollup_minute_observed
  pgsentinel_rollup_hour pgsentinel_rollup_hour_observed);

# Rows of every archive table, and indexes of their partitions.
sub archive_counts
{
	my ($n, $db) = @_;
	my $sql = join(" || ' ' || ",
		map { "'$_=' || (SELECT count(*) FROM $_)" } @tables);
	return $n->safe_psql($db, "SELECT $sql");
}

sub partition_indexes
{
	my ($n, $db) = @_;
	return $n->safe_psql($db, q{
		SELECT string_agg(c.relname || ':' || (SELECT count(*) FROM pg_index x WHERE x.indrelid = c.oid), ' ' ORDER BY c.relname)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE c.relname LIKE 'pgsentinel\_%'});
}

ok($node->poll_query_until('postgres', "SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'archiver running');
my $bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* dumped sleeper */');
$node->safe_psql('postgres',
	join('', map { "SELECT pg_sleep(0.05) /* dumped statement */;\n" } 1 .. 10));
my $newest = $node->safe_psql('postgres',
	'SELECT max(sample_id) FROM pg_stat_statements_history');
ok( $node->poll_query_until('postgres',
		"SELECT statements_last_sample_id >= $newest AND rows_archived > 0 FROM pgsentinel_archive_state"),
	'samples and statements archived');
# a minute rolled up: the rollups have rows to dump
ok( $node->poll_query_until('postgres',
		"SELECT rolled_until > (SELECT min(sample_time) FROM pgsentinel_sample_archive) FROM pgsentinel_archive_state"),
	'a minute rolled up');

# the archive no longer changes while it is dumped and compared
$node->append_conf('postgresql.conf', "pgsentinel_archive.enable = off\n");
$node->reload;
ok( $node->poll_query_until('postgres',
		"SELECT archive_state = 'disabled' AND archive_worker_pid IS NULL FROM pgsentinel_status()"),
	'archiver stopped');
pgs_stop_bg($bg);
my $before = archive_counts($node, 'postgres');
unlike($before, qr/pgsentinel_archive_statement_delta=0\b/, 'statements in the archive');
unlike($before, qr/pgsentinel_rollup_minute=0\b/, 'rollups in the archive');

my $dump = $node->basedir . '/archive.dump';
$node->command_ok(
	[ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
my ($stdout, $stderr);
IPC::Run::run(
	[ 'pg_restore', '-d', $node->connstr('restored'), $dump ],
	'>', \$stdout, '2>', \$stderr);
my @errors = grep { /ERROR:/ } split /\n/, $stderr;
my @unexpected = grep {
	!/ERROR:  (relation "pgsentinel_\w+" already exists|multiple primary keys for table "pgsentinel_\w+" are not allowed)/
} @errors;
is(join("\n", @unexpected), '', 'pg_restore: no error but the partitions\' indexes created twice');

is(archive_counts($node, 'restored'), $before, 'every archived row restored');
is(partition_indexes($node, 'restored'), partition_indexes($node, 'postgres'),
	'every partition keeps its indexes');
is( $node->safe_psql('restored', q{
		SELECT count(*) > 0 FROM pgsentinel_statements_archive
		WHERE query LIKE '%dumped statement%' AND calls > 0}),
	't', 'the statements and their texts read through the restored views');
is( $node->safe_psql('restored', q{
		SELECT count(*) > 0 FROM pgsentinel_ash_archive
		WHERE query LIKE '%dumped sleeper%'}),
	't', 'the samples read through the restored views');

# Without the partitions' index entries (docs/archive.md), a restore in
# one transaction that stops at the first error restores it all too.
my $list = $node->basedir . '/archive.list';
IPC::Run::run([ 'pg_restore', '-l', $dump ], '>', \$stdout);
PostgreSQL::Test::Utils::append_to_file($list,
	join("\n", grep {
		!/ (INDEX|CONSTRAINT) [^ ]+ pgsentinel_(archive|rollup)_[a-z_]+_[0-9]{4}/
	} split /\n/, $stdout) . "\n");
$node->safe_psql('postgres', 'CREATE DATABASE restored_whole');
$node->command_ok(
	[ 'pg_restore', '-L', $list, '--single-transaction', '--exit-on-error',
	  '-d', $node->connstr('restored_whole'), $dump ],
	'pg_restore in one transaction, without the partitions\' indexes');
is(archive_counts($node, 'restored_whole'), $before, 'every archived row restored in one transaction');
is(partition_indexes($node, 'restored_whole'), partition_indexes($node, 'postgres'),
	'every partition has its indexes all the same');

$node->stop;
done_testing();
