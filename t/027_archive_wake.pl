
# The archive interval is what a batch spans (a minute by default): a busy
# server may write more rows, or statement readings, in that time than its
# rings hold.  The sampler (rows) and the statements worker (readings) wake
# the archiver whenever a quarter of their ring has been written since its
# last step.  The archiver's own timer is an hour here: only those wakes
# archive, and nothing may be lost while the rings lap several times.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

# Rows: ten sleeping sessions, 200 rows a second into a ring of 1000.
my $node = pgs_node('wake', conf => q{
pgsentinel_ash.max_entries = 1000
pgsentinel_ash.sampling_period = 0.05
pgsentinel_archive.interval = '1h'
pgsentinel_archive.keep_one_in = 1
});
ok( $node->poll_query_until('postgres',
		"SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'rows: the archiver has made its first step');
my $first = $node->safe_psql('postgres', 'SELECT coalesce(last_sample_id, 0) FROM pgsentinel_archive_state');
my @bg = map { pgs_start_bg($node, "SELECT pg_sleep(600) /* wake-$_ */") } 1 .. 10;
ok(pgs_wait_sessions($node, 10, '%wake-%'), 'ten sessions sampled');
my $written = pgs_status($node, 'ash_rows_written');
ok( $node->poll_query_until('postgres',
		"SELECT ash_rows_written > $written + 3 * ash_capacity FROM pgsentinel_status()"),
	'the ring has lapped three times');
ok( $node->poll_query_until('postgres',
		"SELECT last_sample_id > $first + 300 FROM pgsentinel_archive_state"),
	'the archiver was woken: the rows are archived without its timer');
is( pgs_status($node, 'archive_samples_lost') . '|' . pgs_status($node, 'archive_rows_lost'),
	'0|0', 'no sample and no row lost while the ring lapped');
pgs_stop_bg($_) for @bg;
$node->stop;

# Statement readings: ten statements (each its own query id) run over and
# over, about ten readings a sample into a ring of 1000, while the rows'
# ring (the default) fills slowly: only the statements worker's wakes can
# archive.
my $stm = pgs_node('wake_statements', conf => q{
pgsentinel_pgssh.max_entries = 1000
pgsentinel_ash.sampling_period = 0.05
pgsentinel_archive.interval = '1h'
pgsentinel_archive.keep_one_in = 1
});
ok( $stm->poll_query_until('postgres',
		"SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'statements: the archiver has made its first step');
my @scripts;
for my $k (1 .. 10)
{
	my $f = $stm->basedir . "/wake_$k.sql";
	append_to_file($f, 'SELECT pg_sleep(0.01)' . (', 1' x $k) . ";\n");
	push @scripts, '-f', $f;
}
my $first_reading = $stm->safe_psql('postgres',
	'SELECT coalesce(max(sample_id), 0) FROM pg_stat_statements_history');
my $rows_written = pgs_status($stm, 'ash_rows_written');
my $load = pgs_pgbench_bg($stm, '-n', '-c', '10', '-T', '600', @scripts, 'postgres');
ok( $stm->poll_query_until('postgres',
		"SELECT pgssh_rows > 3 * pgssh_capacity / 4 FROM pgsentinel_status()"),
	'the readings fill the statements ring');
ok( $stm->poll_query_until('postgres',
		"SELECT coalesce(statements_last_sample_id, 0) > $first_reading FROM pgsentinel_archive_state"),
	'the archiver was woken: readings archived without its timer');
cmp_ok( $stm->safe_psql('postgres', 'SELECT ash_rows_written FROM pgsentinel_status()') - $rows_written,
	'<', 36000 / 4, 'while the rows alone would not have woken it');
pgs_stop_bg($load);
$stm->stop;

done_testing();
