
# A fast shutdown never waits for our workers (src/db_worker.c): SIGTERM
# cancels the work under way, which rolls back whole -- rows and watermark
# together -- and the archive after the restart has every sample exactly
# once.  Each case holds a worker provably in the middle of its longest work
# before `pg_ctl stop -m fast`:
#
#  - the archiver waiting for a lock on its own state (held by a prepared
#    transaction, which outlives the restart: the backlog keeps growing);
#  - an archiving step of thousands of samples that has inserted its rows
#    and waits in a trigger on the archive (it would wait for ever: the
#    shutdown ended only at pg_ctl's timeout before the fix);
#  - the statements step, held the same way;
#  - the roll of a fleet server's rows (src/fleet/fleet.c), held the same way;
#  - at the end, a ring of hundreds of thousands of rows saved at shutdown.
#
# The trigger is the test's own way to hold a step where it is; a busy
# server holds it there with rows to copy.  keep_one_in = 1, so that within
# a history the archived sample ids are consecutive.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time);
use Test::More;
use PgsTest;

my $node = pgs_node('shutdown',
	conf => "max_connections = 150\n"
	  . "max_prepared_transactions = 2\n"
	  . "pgsentinel_ash.max_entries = 1000000\n"
	  . "pgsentinel_archive.interval = 200ms\n"
	  . "pgsentinel_archive.keep_one_in = 1\n");

ok($node->poll_query_until('postgres', "SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'archiver running');

# A step whose INSERT into the table named in hold waits until the row is
# deleted.  The archiver's search path is pg_catalog: the body names public.
$node->safe_psql('postgres', q{
CREATE TABLE public.hold (tab text PRIMARY KEY);
CREATE FUNCTION public.hold_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WHILE EXISTS (SELECT FROM public.hold WHERE tab = TG_TABLE_NAME) LOOP
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER hold_step AFTER INSERT ON pgsentinel_archive_batch
  FOR EACH STATEMENT EXECUTE FUNCTION public.hold_step();
CREATE TRIGGER hold_step AFTER INSERT ON pgsentinel_archive_statement_batch
  FOR EACH STATEMENT EXECUTE FUNCTION public.hold_step();
});

my @sleepers = (pgs_start_sleepers($node, 40, 3600, 'busy'));

# Stop fast; the shutdown must end well within pg_ctl's own timeout, and
# under $bound seconds (the bound the bug crosses: a step that is never
# cancelled waits for ever, a lock wait for the whole lock_timeout of 10 s).
sub stop_fast
{
	my ($what, $bound) = @_;
	my $log_off = -s $node->logfile;
	local $ENV{PGCTLTIMEOUT} = 120;
	my $t0 = time;
	my $ok = $node->stop('fast', fail_ok => 1);
	my $took = time - $t0;
	ok($ok, "$what: pg_ctl stop -m fast succeeded");
	cmp_ok($took, '<', $bound, sprintf("$what: shut down in %.1f s (< %d s)", $took, $bound));
	my $log = substr(slurp_file($node->logfile), $log_off);
	like($log, qr/database system is shut down/, "$what: the server is down");
	unlike($log, qr/FATAL:  terminating background worker "pgsentinel/,
		"$what: our workers ended quietly");
	unlike($log, qr/terminated by signal/, "$what: nothing was killed");
	$node->_update_pid(-1) unless $ok;	# pg_ctl gave up: kill it below
	$node->stop('immediate', fail_ok => 1) unless $ok;
}

# The archiver's wait, as pg_stat_activity shows it.
sub archiver_waits
{
	my ($activity, $wait_event) = @_;
	return $node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE backend_type = 'pgsentinel archiver'
		  AND query = '$activity' AND wait_event = '$wait_event'});
}

# Within each history the archived ids are consecutive and none repeats.
sub check_exactly_once
{
	my ($what) = @_;
	is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
		  SELECT sample_id - lag(sample_id) OVER (ORDER BY sample_time) AS step
		  FROM pgsentinel_sample_archive) d
		WHERE step <> 1 AND step > 0}),
		'0', "no sample skipped: $what");
	is( $node->safe_psql('postgres',
			'SELECT count(*) - count(DISTINCT sample_time) FROM pgsentinel_sample_archive'),
		'0', "no sample archived twice: $what");
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (
		  SELECT sample_id FROM pgsentinel_samples()
		   WHERE sample_id BETWEEN (SELECT min(sample_id) FROM pgsentinel_sample_archive)
		                       AND (SELECT last_sample_id FROM pgsentinel_archive_state)
		  EXCEPT SELECT sample_id FROM pgsentinel_sample_archive) d}),
		'0', "every sample of the ring up to the watermark is archived: $what");
}

# Wait until the archive holds the ring's newest sample as of now.
sub wait_archived
{
	my ($what) = @_;
	my $newest = $node->safe_psql('postgres', 'SELECT max(sample_id) FROM pgsentinel_samples()');
	ok( $node->poll_query_until('postgres',
			"SELECT history_id = pgsentinel_history_id() AND last_sample_id >= $newest FROM pgsentinel_archive_state"),
		"archived up to the newest sample: $what");
}

wait_archived('start');
my $history = $node->safe_psql('postgres', 'SELECT pgsentinel_history_id()');

# --- 1. waiting for a lock on the archive's state ---------------------------

$node->safe_psql('postgres', q{
BEGIN;
LOCK TABLE pgsentinel_archive_state IN ACCESS EXCLUSIVE MODE;
PREPARE TRANSACTION 'hold_state'});
ok(archiver_waits('pgsentinel archive step', 'relation'),
	'the archiver waits for the lock on its state');
my $held_from = $node->safe_psql('postgres', 'SELECT max(sample_id) FROM pgsentinel_samples()');
stop_fast('waiting for a lock', 10);

# The prepared transaction still holds the lock: the backlog grows.
$node->start;
push @sleepers, pgs_start_sleepers($node, 40, 3600, 'busy again');
is($node->safe_psql('postgres', 'SELECT pgsentinel_history_id()'), $history,
	'the ring came back with its history');
ok(archiver_waits('pgsentinel archive step', 'relation'),
	'the archiver waits for the lock again');
ok( $node->poll_query_until('postgres',
		"SELECT max(sample_id) >= $held_from + 2000 FROM pgsentinel_samples()"),
	'a backlog of thousands of samples');

# --- 2. in the middle of a step of thousands of samples ---------------------

$node->safe_psql('postgres',
	"INSERT INTO public.hold VALUES ('pgsentinel_archive_batch')");
$node->safe_psql('postgres', "ROLLBACK PREPARED 'hold_state'");
ok(archiver_waits('pgsentinel archive step', 'PgSleep'),
	'the archiver inserted the rows of a step and waits in the trigger');
stop_fast('in an archiving step', 30);

$node->start;
push @sleepers, pgs_start_sleepers($node, 40, 3600, 'after');
ok(archiver_waits('pgsentinel archive step', 'PgSleep'),
	'after the restart, the same step is held again');
$node->safe_psql('postgres', 'DELETE FROM public.hold');
wait_archived('after the step was cancelled');
check_exactly_once('after the step was cancelled');
is($node->safe_psql('postgres',
		"SELECT count(DISTINCT history_id) FROM pgsentinel_archive_state"),
	'1', 'one watermark');

# --- 3. in the middle of the statements step --------------------------------

$node->safe_psql('postgres',
	"INSERT INTO public.hold VALUES ('pgsentinel_archive_statement_batch')");
$node->safe_psql('postgres',
	join('', map { "SELECT pg_sleep(0.05) /* archived statement */;\n" } 1 .. 10));
# The statement's readings reach the history once the statements worker
# reads it (a sample or a sweep that sees it): on a loaded machine both can
# miss ten calls of 50 ms, so the poll calls it again each time it looks.
ok( $node->poll_query_until('postgres', q{
		WITH s AS MATERIALIZED (SELECT pg_sleep(0.05) /* archived statement */)
		SELECT (SELECT count(*) FROM s) = 1
		   AND (SELECT count(*) = 1 FROM pg_stat_activity
		        WHERE backend_type = 'pgsentinel archiver'
		          AND query = 'pgsentinel archive statements'
		          AND wait_event = 'PgSleep')}),
	'the statements step inserted its rows and waits in the trigger');
stop_fast('in a statements step', 30);

$node->start;
$node->safe_psql('postgres', 'DELETE FROM public.hold');
my $newest = $node->safe_psql('postgres',
	'SELECT max(sample_id) FROM pg_stat_statements_history');
ok( $node->poll_query_until('postgres',
		"SELECT statements_last_sample_id >= $newest FROM pgsentinel_archive_state"),
	'the statements history is archived after the restart');
is( $node->safe_psql('postgres', q{
	SELECT count(*) - count(DISTINCT (ash_time, userid, dbid, queryid, toplevel))
	FROM pgsentinel_archive_statement_delta}),
	'0', 'no statement reading archived twice');
cmp_ok( $node->safe_psql('postgres', q{
	SELECT count(*) FROM pgsentinel_statements_archive
	WHERE query LIKE '%archived statement%' AND calls > 0}),
	'>', 0, "the statement's deltas are archived");

# --- 3b. in the middle of a fleet server's roll ----------------------------

# A fleet server's five minutes of rows (written as a pull would have), which
# the archiver rolls up after its tick, in a transaction of its own; held in
# a trigger on the minute rollups.
$node->safe_psql('postgres', q{
INSERT INTO pgsentinel_fleet_server (server_id, name, method, conninfo, pulled_until,
                                     retention, minute_retention, hour_retention)
VALUES (901, 'held', 'pull', '', '2021-03-01 00:05+00', '100 years', '100 years', '100 years');
SELECT pgsentinel_fleet_partitions(901, '2021-03-01', '2021-03-01');
INSERT INTO pgsentinel_fleet_wait_event VALUES (901, 0, 1, 'CPU', 'CPU');
INSERT INTO pgsentinel_fleet_session (server_id, feed, day, session_id, hash, pid, backend_type)
VALUES (901, 0, '2021-03-01', 1, 1, 4242, 'client backend');
CREATE TRIGGER hold_step AFTER INSERT ON pgsentinel_fleet_rollup_minute_batch
  FOR EACH STATEMENT EXECUTE FUNCTION public.hold_step();
INSERT INTO public.hold VALUES ('pgsentinel_fleet_rollup_minute_batch');
INSERT INTO pgsentinel_fleet_batch (server_id, feed, first_time, last_time, sample_data,
                                    row_data)
SELECT 901, 0, '2021-03-01 00:00+00', '2021-03-01 00:04:59+00',
       pgsentinel_sample_pack(array_agg(i::int8 ORDER BY i),
                              array_agg(i * 1000000::int8 ORDER BY i),
                              array_agg(1::float8), array_agg(1::float8), array_agg(1),
                              array_agg(false)),
       pgsentinel_batch_pack(pgsentinel_pack(array_agg(i + 1 ORDER BY i)),
           pgsentinel_pack(array_agg(1)), pgsentinel_pack(array_agg(1)),
           array_agg('active'::text), NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
FROM generate_series(0, 299) i;
});
my $roll_call = 'SELECT count(*) FROM public.pgsentinel_fleet_roll(NULL::pg_catalog.text)';
ok(archiver_waits($roll_call, 'PgSleep'),
	'the archiver inserted a fleet server\'s rollups and waits in the trigger');
stop_fast('in a fleet roll', 30);

$node->start;
ok(archiver_waits($roll_call, 'PgSleep'), 'after the restart, the same roll is held again');
$node->safe_psql('postgres', 'DELETE FROM public.hold');
ok( $node->poll_query_until('postgres',
		"SELECT rolled_until = '2021-03-01 00:05+00' FROM pgsentinel_fleet_status WHERE name = 'held'"),
	'the fleet server is rolled up after the restart');
is( $node->safe_psql('postgres', q{
	SELECT sum(samples) || ' ' || sum(observed)
	FROM pgsentinel_fleet_rollup_minute_observed WHERE server_id = 901}),
	'300 300', 'its samples rolled up once');

# --- 4. a large ring saved at shutdown --------------------------------------

push @sleepers, pgs_start_sleepers($node, 100, 3600, 'ring');
ok( $node->poll_query_until('postgres',
		"SELECT ash_rows >= 200000 FROM pgsentinel_status()"),
	'the ring holds hundreds of thousands of rows');
my $rows = pgs_status($node, 'ash_rows');
stop_fast("a ring of $rows rows saved", 30);
$node->start;
cmp_ok(pgs_status($node, 'ash_rows'), '>=', $rows, 'the ring came back whole');
wait_archived('at the end');
check_exactly_once('at the end');

pgs_stop_bg($_) for @sleepers;
$node->stop;
done_testing();
