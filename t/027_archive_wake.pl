
# The archive interval is what a batch spans (a minute by default): a busy
# server may write more rows, or statement readings, in that time than its
# rings hold.  The sampler (rows) and the statements worker (readings) wake
# the archiver whenever a quarter of their ring has been written since its
# last step.  The archiver's own timer is an hour here: only those wakes
# archive, and nothing may be lost while the rings lap several times.
# A reload asks for archiving too: samples the archiver had to hold back
# then (rows waiting for their query id) are archived once their hold
# ends, not with the next hour's batch.

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

# Held samples: a SELECT waits for a lock while it is parsed, before it has
# a query id, so the samples from its first on are held back.  A reload
# then archives only the samples before it; once the lock is released (the
# statement runs, its rows get the query id) the rest follow without the
# hour's timer.
my $held = pgs_node('held', conf => q{
pgsentinel_archive.interval = '1h'
pgsentinel_archive.keep_one_in = 1
});
$held->safe_psql('postgres', 'CREATE TABLE held_t (v int)');
ok( $held->poll_query_until('postgres',
		"SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'held: the archiver has made its first step');
my $locker = pgs_start_bg($held,
	'BEGIN; LOCK TABLE held_t; SELECT pg_sleep(600) /* held-locker */;');
ok(pgs_wait_sessions($held, 1, '%held-locker%'), 'held: the table is locked');
my $waiter = pgs_start_bg($held, 'SELECT count(*) FROM held_t /* held-waiter */');
ok(pgs_wait_sessions($held, 1, '%held-waiter%', 'relation'),
	'held: a statement waits for the lock while parsed');
ok( $held->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE query LIKE '%held-waiter%' AND wait_event_type = 'Lock'"),
	'held: it is sampled');
my $first_held = $held->safe_psql('postgres', q{
	SELECT min(sample_id) FROM pgsentinel_samples() s
	 WHERE EXISTS (SELECT FROM pg_active_session_history a
				    WHERE a.ash_time = s.sample_time AND a.query LIKE '%held-waiter%' AND wait_event_type = 'Lock')});
is( $held->safe_psql('postgres',
		"SELECT count(*) > 0 AND bool_and(queryid IS NULL) FROM pg_active_session_history WHERE query LIKE '%held-waiter%' AND wait_event_type = 'Lock'"),
	't', 'held: its rows wait for their query id');
my $asked = $held->safe_psql('postgres', 'SELECT max(sample_id) FROM pgsentinel_samples()');
my $before = $held->safe_psql('postgres', 'SELECT clock_timestamp()');
$held->reload;
ok( $held->poll_query_until('postgres',
		"SELECT archive_last_time > '$before' FROM pgsentinel_status()"),
	'held: the reload made the archiver archive');
cmp_ok($held->safe_psql('postgres', 'SELECT last_sample_id FROM pgsentinel_archive_state'),
	'<', $first_held, 'held: it stopped before the held samples');
$held->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%held-locker%' AND pid <> pg_backend_pid()");
pgs_stop_bg($locker);
is(pgs_stop_bg($waiter, wait => 1), 0, 'held: the statement ran once the lock was released');
ok( $held->poll_query_until('postgres',
		"SELECT last_sample_id >= $asked FROM pgsentinel_archive_state"),
	'held: the samples asked for are archived once their hold ended');
is( $held->safe_psql('postgres',
		"SELECT count(*) > 0 AND bool_and(queryid IS NOT NULL) FROM pgsentinel_ash_archive WHERE query LIKE '%held-waiter%' AND wait_event_type = 'Lock'"),
	't', 'held: with their query id');

# A hold alone changes nothing: a cycle the interval ran (20 s now), held
# back by a statement no archiving was asked for after, leaves the rest for
# the next interval (no try every 5 s: batches keep their length).
$held->append_conf('postgresql.conf', "pgsentinel_archive.interval = '20s'\n");
my $before_reload = $held->safe_psql('postgres', 'SELECT clock_timestamp()');
$held->reload;
ok( $held->poll_query_until('postgres',
		"SELECT archive_last_time > '$before_reload' FROM pgsentinel_status()"),
	'held again: the archiver archived at the reload');
$locker = pgs_start_bg($held,
	'BEGIN; LOCK TABLE held_t; SELECT pg_sleep(600) /* held-locker */;');
ok(pgs_wait_sessions($held, 1, '%held-locker%'), 'held again: the table is locked');
$waiter = pgs_start_bg($held, 'SELECT count(*) FROM held_t /* held-second */');
ok( $held->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE query LIKE '%held-second%' AND wait_event_type = 'Lock'"),
	'held again: a second statement is sampled waiting while parsed');
my $cycle = $held->safe_psql('postgres', 'SELECT archive_last_time FROM pgsentinel_status()');
ok( $held->poll_query_until('postgres',
		"SELECT archive_last_time > '$cycle' FROM pgsentinel_status()"),
	'held again: the interval ran a cycle meanwhile');
$cycle = $held->safe_psql('postgres', 'SELECT archive_last_time FROM pgsentinel_status()');
# (nothing may happen: a window longer than two of the 5-s tries, shorter
# than the interval)
ok(pgs_wait_until_time($held, pgs_server_time($held), 12), 'held again: twelve seconds later');
is($held->safe_psql('postgres', 'SELECT archive_last_time FROM pgsentinel_status()'),
	$cycle, 'held again: the archiver waits for its interval');
$held->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%held-locker%' AND pid <> pg_backend_pid()");
pgs_stop_bg($locker);
pgs_stop_bg($waiter, wait => 1);
$held->stop;

done_testing();
