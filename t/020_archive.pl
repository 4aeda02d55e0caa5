
# The archive: every sample archived exactly once across a killed archiver,
# a clean restart, a crash and a promotion, and every reading of the
# statements history with them; catch-up after the database refused
# connections, after inserts were refused and after a lock was held;
# samples the ring overwrote first are counted; retention drops whole
# partitions (texts and statements with them) and keeps the rollups; a
# standby writes nothing.  keep_one_in = 1 here, so that within one history the archived
# sample ids are consecutive: a gap is a lost sample, a repeat a duplicate.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $conf = "pgsentinel_archive.interval = 200ms\n"
  . "pgsentinel_archive.keep_one_in = 1\n"
  . "pgsentinel_ash.max_entries = 2500\n";
my $node = pgs_node('archive', conf => $conf,
	init_opts => { allows_streaming => 1 });
$node->safe_psql('postgres', 'CREATE DATABASE ctl');
$node->safe_psql('ctl', 'CREATE EXTENSION pgsentinel');

# The watermark: "history_id|last_sample_id".
sub watermark
{
	my ($n) = @_;
	return $n->safe_psql('postgres',
		'SELECT history_id || \'|\' || last_sample_id FROM pgsentinel_archive_state');
}

# Wait until the archive holds the ring's newest sample as of now.
sub wait_archived
{
	my ($n, $what) = @_;
	my $newest = $n->safe_psql('postgres', 'SELECT max(sample_id) FROM pgsentinel_samples()');
	ok( $n->poll_query_until('postgres',
			"SELECT history_id = pgsentinel_history_id() AND last_sample_id >= $newest FROM pgsentinel_archive_state"),
		"archived up to the newest sample: $what");
}

# Within each history, the archived ids are consecutive and none repeats;
# no sample time repeats at all.  Only samples after $since, if given.
sub check_exactly_once
{
	my ($n, $what, $since) = @_;
	my $where = defined $since ? "WHERE sample_time > '$since'" : '';
	is( $n->safe_psql('postgres', qq{
		SELECT count(*) FROM (
		  SELECT sample_id - lag(sample_id) OVER (ORDER BY sample_time) AS step
		  FROM pgsentinel_sample_archive $where) d
		WHERE step <> 1 AND step > 0}),
		'0', "no sample skipped within a history: $what");
	is( $n->safe_psql('postgres',
			'SELECT count(*) - count(DISTINCT sample_time) FROM pgsentinel_sample_archive'),
		'0', "no sample archived twice: $what");
}

# The statements history: a few calls, each sampled several times, so
# that its readings have deltas to archive.
sub stmt_workload
{
	my ($n) = @_;
	$n->safe_psql('postgres',
		join('', map { "SELECT pg_sleep(0.05) /* archived statement */;\n" } 1 .. 10));
}

# Wait until the statements' watermark has passed the newest reading of
# the ring as of now, in the ring's history.
sub stmt_wait_archived
{
	my ($n, $what) = @_;
	my $newest = $n->safe_psql('postgres',
		'SELECT max(sample_id) FROM pg_stat_statements_history');
	ok( $n->poll_query_until('postgres',
			"SELECT statements_history_id = pgsentinel_history_id() AND statements_last_sample_id >= $newest FROM pgsentinel_archive_state"),
		"statements archived up to the newest reading: $what");
}

# No reading archived twice (across histories, by time); every delta the
# helper computes over the ring up to the watermark is in the archive.
sub stmt_check_exactly_once
{
	my ($n, $what) = @_;
	is( $n->safe_psql('postgres', q{
		SELECT count(*) - count(DISTINCT (ash_time, userid, dbid, queryid, toplevel))
		FROM pgsentinel_archive_statement_delta}),
		'0', "no statement reading archived twice: $what");
	is( $n->safe_psql('postgres', q{
		SELECT count(*) FROM (
		  SELECT d.ash_time, d.userid, d.dbid, d.queryid, d.toplevel, d.reset,
		         d.calls, d.exec_ms
		  FROM pg_stat_statements_history_deltas('-infinity', 'infinity') d,
		       pgsentinel_archive_state st
		  WHERE d.sample_id <= st.statements_last_sample_id
		    AND (d.reset OR d.calls <> 0 OR d.rows <> 0 OR d.exec_ms <> 0
		         OR d.shared_blks_hit <> 0 OR d.shared_blks_read <> 0
		         OR d.shared_blks_dirtied <> 0 OR d.shared_blks_written <> 0
		         OR d.plans <> 0 OR d.plan_ms <> 0 OR d.temp_blks_read <> 0
		         OR d.temp_blks_written <> 0 OR d.wal_bytes <> 0)
		  EXCEPT ALL
		  SELECT ash_time, userid, dbid, queryid, toplevel, reset, calls, exec_ms
		  FROM pgsentinel_statements_archive) d}),
		'0', "no statement reading missing: $what");
	cmp_ok( $n->safe_psql('postgres', q{
		SELECT count(*) FROM pgsentinel_statements_archive
		WHERE query LIKE '%archived statement%' AND calls > 0}),
		'>', 0, "the statement's deltas and text are archived: $what");
}

# Each new history starts lower: count the restarts of the sample ids.
sub histories
{
	my ($n) = @_;
	return $n->safe_psql('postgres', q{
		SELECT 1 + count(*) FROM (
		  SELECT sample_id - lag(sample_id) OVER (ORDER BY sample_time) AS step
		  FROM pgsentinel_sample_archive) d WHERE step <= 0});
}

ok($node->poll_query_until('postgres', "SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'archiver running');
my $bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* archived sleeper */');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE query LIKE '%archived sleeper%'"),
	'the sleeper is sampled');
wait_archived($node, 'start');
my $archived = $node->safe_psql('postgres', q{
	SELECT count(*) FROM pgsentinel_ash_archive WHERE query LIKE '%archived sleeper%'});
cmp_ok($archived, '>', 0, 'the sleeper is in the archive');

# The ring and the archive hold the same samples where both hold them (the
# ring read once: each read of a full ring starts where the sampler is).
is( $node->safe_psql('postgres', q{
	WITH r AS MATERIALIZED (SELECT sample_id, sample_time FROM pgsentinel_samples()),
	     w AS (SELECT greatest((SELECT min(sample_id) FROM pgsentinel_sample_archive),
	                           (SELECT min(sample_id) FROM r
	                             WHERE sample_time >= pgsentinel_ring_start())) AS a,
	                  (SELECT last_sample_id FROM pgsentinel_archive_state) AS b)
	SELECT count(*) FROM (
	  (SELECT sample_id FROM r, w WHERE sample_id BETWEEN a AND b
	   EXCEPT SELECT sample_id FROM pgsentinel_sample_archive, w WHERE sample_id BETWEEN a AND b)
	  UNION ALL
	  (SELECT sample_id FROM pgsentinel_sample_archive, w WHERE sample_id BETWEEN a AND b
	   EXCEPT SELECT sample_id FROM r, w WHERE sample_id BETWEEN a AND b)) d}),
	'0', 'same sample ids in the ring and in the archive');
check_exactly_once($node, 'start');
stmt_workload($node);
stmt_wait_archived($node, 'start');
stmt_check_exactly_once($node, 'start');

# Sessions whose statement changes at every sample (pgbench: transactions
# of an UPDATE that may wait for another client's and a query with a new
# literal each time): every column of their rows in the archive equals the
# ring's, the texts filled back from their templates and values, the idle
# blockers' rows (weight 0) included.
$node->safe_psql('postgres', q{
	CREATE TABLE churn (id int PRIMARY KEY, v int);
	INSERT INTO churn SELECT g, 0 FROM generate_series(1, 10) g;});
my $churn = $node->basedir . '/churn.sql';
append_to_file($churn, q{\set id random(1, 10)
\set v random(1, 1000000)
BEGIN;
UPDATE churn SET v = :v WHERE id = :id;
SELECT pg_sleep(0.002), 'churn ' || :v;
END;
});
# (3 clients for 2 s: their rows and the sleeper's fill a third of the
# ring, which must still hold them once the archive caught up)
my $pgb = pgs_pgbench_bg($node, '-n', '-c', '3', '-j', '2', '-T', '2', '-f', $churn, 'postgres');
is(pgs_stop_bg($pgb, wait => 1), 0, 'pgbench churned for 2 s');
wait_archived($node, 'after the churn');
my $cols = 'ash_time, datid, datname, pid, leader_pid, usesysid, usename,
	application_name, client_addr, client_hostname, client_port, backend_start,
	xact_start, query_start, state_change, wait_event_type, wait_event, state,
	backend_xid, backend_xmin, top_level_query, query, cmdtype, queryid,
	nested_queryid, backend_type, blockers, blockerpid, blocker_state, sample_id,
	blocking_pids, sample_period, blocker_usesysid, lock_type, lock_relation,
	lock_target, lock_mode, blocker_lock_modes';
# (the ring read once; its oldest sample may be partly overwritten)
my ($compared, $statements, $blocked, $differ) = split /\|/, $node->safe_psql('postgres', qq{
	WITH r AS MATERIALIZED (
	       SELECT $cols, weight FROM pgsentinel_ash_ring WHERE query LIKE '%churn%'),
	     w AS (SELECT (SELECT min(sample_id) + 1 FROM r) AS a,
	                  (SELECT last_sample_id FROM pgsentinel_archive_state) AS b),
	     rr AS (SELECT r.* FROM r, w WHERE sample_id BETWEEN a AND b),
	     ar AS (SELECT $cols, weight FROM pgsentinel_ash_archive, w
	             WHERE query LIKE '%churn%' AND sample_id BETWEEN a AND b)
	SELECT count(*), count(DISTINCT (pid, query_start)), count(*) FILTER (WHERE blockers > 0),
	       (SELECT count(*) FROM ((SELECT * FROM rr EXCEPT ALL SELECT * FROM ar)
	                              UNION ALL (SELECT * FROM ar EXCEPT ALL SELECT * FROM rr)) d)
	  FROM rr});
cmp_ok($compared, '>', 50, 'the churning sessions\' rows are compared');
cmp_ok($statements, '>', $compared / 4,
	"their statements change from sample to sample ($statements statements in $compared rows, $blocked blocked)");
is($differ, '0', 'every column of every row of them is archived as sampled');

# 1. The archiver killed (SIGTERM): launched again, goes on.
my $apid = pgs_status($node, 'archive_worker_pid');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($apid)");
ok( $node->poll_query_until('postgres',
		"SELECT archive_worker_pid IS NOT NULL AND archive_worker_pid <> $apid FROM pgsentinel_status()"),
	'a new archiver after the old one was terminated');
wait_archived($node, 'after terminate');
check_exactly_once($node, 'after terminate');
stmt_workload($node);
stmt_wait_archived($node, 'after terminate');
stmt_check_exactly_once($node, 'after terminate');

# 2. A clean restart: the ring comes back with its history, the archive
# goes on after its last sample id.
my ($hist_before) = split /\|/, watermark($node);
pgs_stop_bg($bg);
$node->restart;
is($node->safe_psql('postgres', 'SELECT pgsentinel_history_id()'), $hist_before,
	'same history after a clean restart');
$bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* archived sleeper 2 */');
wait_archived($node, 'after restart');
check_exactly_once($node, 'after restart');
is(histories($node), '1', 'one history across the clean restart');
stmt_workload($node);
stmt_wait_archived($node, 'after restart');
stmt_check_exactly_once($node, 'after restart');

# 3. A crash: the ring starts a new history; the archive goes on after the
# watermark's time.
my $victim = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE '%archived sleeper 2%' AND pid <> pg_backend_pid()");
kill 'KILL', $victim;
ok( $node->poll_query_until('postgres',
		"SELECT pgsentinel_history_id() <> $hist_before"),
	'a new history after the crash');
pgs_stop_bg($bg);
wait_archived($node, 'after crash');
check_exactly_once($node, 'after crash');
is(histories($node), '2', 'two histories after the crash');
stmt_workload($node);
stmt_wait_archived($node, 'after crash');
stmt_check_exactly_once($node, 'after crash');

# 4. The database refuses connections: the archiver cannot connect; once it
# can, it catches up from the ring.
$node->safe_psql('ctl', 'ALTER DATABASE postgres ALLOW_CONNECTIONS false');
$apid = $node->safe_psql('ctl',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'pgsentinel archiver'");
$node->safe_psql('ctl', "SELECT pg_terminate_backend($apid)");
ok( $node->poll_query_until('ctl',
		"SELECT archive_state = 'not connected' FROM pgsentinel_status()"),
	'status says the archiver cannot connect');
my $stuck = $node->safe_psql('ctl', 'SELECT last_sample_time FROM pgsentinel_status()');
ok( $node->poll_query_until('ctl',
		"SELECT count(*) >= 50 FROM pgsentinel_samples() WHERE sample_time > '$stuck'"),
	'samples taken while the archiver cannot connect');
$node->safe_psql('ctl', 'ALTER DATABASE postgres ALLOW_CONNECTIONS true');
ok($node->poll_query_until('postgres', "SELECT archive_state = 'ok' FROM pgsentinel_status()", 't'),
	'archiving again once connections are allowed');
wait_archived($node, 'after the database refused connections');
check_exactly_once($node, 'after the database refused connections');
is( $node->safe_psql('postgres',
		"SELECT count(*) > 40 FROM pgsentinel_sample_archive WHERE sample_time > '$stuck'"),
	't', 'the samples taken meanwhile are archived');

# 5. Inserts refused (a trigger raises): the step rolls back, rows and
# watermark together; once allowed, it catches up.
$node->safe_psql('postgres', q{
	CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql
	AS $$ BEGIN RAISE EXCEPTION 'archive refused for the test'; END $$;
	CREATE TRIGGER refuse BEFORE INSERT ON pgsentinel_archive_batch
	FOR EACH ROW EXECUTE FUNCTION refuse()});
ok( $node->poll_query_until('postgres',
		"SELECT archive_state = 'failing' AND archive_message LIKE '%archive refused for the test%' FROM pgsentinel_status()"),
	'status shows the refused insert');
my $wm = watermark($node);
pgs_wait_samples($node, 30);
is(watermark($node), $wm, 'the watermark did not move while inserts failed');
$node->safe_psql('postgres', 'DROP TRIGGER refuse ON pgsentinel_archive_batch');
wait_archived($node, 'after refused inserts');
check_exactly_once($node, 'after refused inserts');
stmt_wait_archived($node, 'after refused inserts');
stmt_check_exactly_once($node, 'after refused inserts');

# 6. A lock held on an archive table longer than the archiver waits.
my $locker = pgs_start_interactive($node,
	"BEGIN; LOCK TABLE pgsentinel_archive_batch IN ACCESS EXCLUSIVE MODE;\n");
ok( $node->poll_query_until('postgres',
		"SELECT archive_state = 'failing' AND archive_message LIKE '%lock%' FROM pgsentinel_status()"),
	'status shows the lock');
$locker->{in} .= "COMMIT;\n";
$locker->{run}->pump_nb while length $locker->{in};
pgs_stop_bg($locker);
wait_archived($node, 'after the lock');
check_exactly_once($node, 'after the lock');
is(pgs_status($node, 'archive_samples_lost') . '|' . pgs_status($node, 'archive_rows_lost'),
	'0|0', 'nothing lost so far');

# 7. The ring overwrites samples before they are archived: they are counted.
$node->append_conf('postgresql.conf', "pgsentinel_archive.enable = off\n");
$node->reload;
ok($node->poll_query_until('postgres', "SELECT archive_state = 'disabled' FROM pgsentinel_status()"),
	'archiver disabled');
ok( $node->poll_query_until('postgres',
		"SELECT archive_worker_pid IS NULL FROM pgsentinel_status()"),
	'archiver gone');
# more samples than the ring of samples holds (as many as rows: 2500)
my $wm_id = (split /\|/, watermark($node))[1];
ok( $node->poll_query_until('postgres',
		"SELECT min(sample_id) > $wm_id + 1 FROM pgsentinel_samples()", 't'),
	'the ring overwrote unarchived samples');
$node->append_conf('postgresql.conf', "pgsentinel_archive.enable = on\n");
$node->reload;
my $wrapped_at = $node->safe_psql('postgres', 'SELECT now()');
wait_archived($node, 'after the ring wrapped');
cmp_ok(pgs_status($node, 'archive_samples_lost'), '>', 0, 'lost samples counted');
like(pgs_status($node, 'diagnosis'), qr/overwrote \d+ samples/, 'diagnosis names the loss');

# 8. Retention: raw days older than pgsentinel_archive.retention are dropped
# whole, texts and activities with them; the minute rollups of those days
# (kept 30 days) stay.  And the archiver waits for no reader of the
# archive: while a long query holds the samples' and texts' tables, a
# missing day is made (attached) and archiving goes on; those tables' days
# past retention are left for a later pass, the others dropped.  (The
# reader holds its locks before the old days are made: no pass can drop
# those two before the test looks.)
my $old = $node->safe_psql('postgres',
	"SELECT to_char(timezone('UTC', now())::date - 10, 'YYYYMMDD')");
my $tomorrow = $node->safe_psql('postgres',
	"SELECT to_char(timezone('UTC', now())::date + 1, 'YYYYMMDD')");
$node->safe_psql('postgres', "DROP TABLE pgsentinel_archive_batch_$tomorrow");
my $reader = pgs_start_bg($node,
	'BEGIN; LOCK TABLE pgsentinel_archive_batch, pgsentinel_archive_text IN ACCESS SHARE MODE; '
	  . 'SELECT pg_sleep(600) /* archive-reader */;');
ok(pgs_wait_sessions($node, 1, '%archive-reader%'), 'a reader holds the archive');
# (attached: CREATE TABLE ... PARTITION OF would wait for the reader)
$node->safe_psql('postgres', qq{
	CREATE TABLE pgsentinel_archive_batch_$old (LIKE pgsentinel_archive_batch);
	ALTER TABLE pgsentinel_archive_batch ATTACH PARTITION pgsentinel_archive_batch_$old
	  FOR VALUES FROM (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp))
	  TO (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp + interval '1 day'));
	CREATE TABLE pgsentinel_archive_text_$old (LIKE pgsentinel_archive_text);
	ALTER TABLE pgsentinel_archive_text ATTACH PARTITION pgsentinel_archive_text_$old
	  FOR VALUES FROM (to_date('$old', 'YYYYMMDD')) TO (to_date('$old', 'YYYYMMDD') + 1);
	CREATE TABLE pgsentinel_archive_statement_batch_$old PARTITION OF pgsentinel_archive_statement_batch
	  FOR VALUES FROM (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp))
	  TO (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp + interval '1 day'));
	CREATE TABLE pgsentinel_archive_statement_text_$old PARTITION OF pgsentinel_archive_statement_text
	  FOR VALUES FROM (to_date('$old', 'YYYYMMDD')) TO (to_date('$old', 'YYYYMMDD') + 1);
	CREATE TABLE pgsentinel_rollup_minute_batch_$old PARTITION OF pgsentinel_rollup_minute_batch
	  FOR VALUES FROM (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp))
	  TO (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp + interval '1 day'));
	INSERT INTO pgsentinel_archive_text VALUES (to_date('$old', 'YYYYMMDD'), 1, 0, 'old text');
	INSERT INTO pgsentinel_rollup_minute_batch
	  VALUES (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp),
	          pgsentinel_minute_pack('{NULL}'::text[], '{NULL}'::oid[], '{NULL}'::text[],
	              '{NULL}'::text[], '{NULL}'::text[], '{NULL}'::text[], '{NULL}'::text[],
	              '{NULL}'::int8[], '{1}'::float8[], '{1}'::int8[]))});
my $before_reader = $node->safe_psql('postgres',
	'SELECT last_sample_id FROM pgsentinel_archive_state');
# a reload makes the archiver look after its partitions at once
$node->reload;
ok( $node->poll_query_until('postgres', qq{
		SELECT to_regclass('pgsentinel_archive_batch_$tomorrow') IS NOT NULL
		   AND (SELECT count(*) FROM pg_class
		         WHERE relname IN ('pgsentinel_archive_statement_batch_$old',
		                           'pgsentinel_archive_statement_text_$old')) = 0
		   AND (SELECT last_sample_id > $before_reader FROM pgsentinel_archive_state)}),
	'with a reader holding the archive, a day is made, others dropped, archiving goes on');
is( $node->safe_psql('postgres', qq{
		SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_class
		 WHERE relname IN ('pgsentinel_archive_batch_$old', 'pgsentinel_archive_text_$old')}),
	"pgsentinel_archive_batch_$old, pgsentinel_archive_text_$old",
	'the days of the tables in use are left');
is( $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM pg_inherits
		         WHERE inhrelid = 'pgsentinel_archive_batch_$tomorrow'::regclass
		           AND inhparent = 'pgsentinel_archive_batch'::regclass),
		       (SELECT count(*) FROM pg_index
		         WHERE indrelid = 'pgsentinel_archive_batch_$tomorrow'::regclass)
		       = (SELECT count(*) FROM pg_index
		           WHERE indrelid = 'pgsentinel_archive_batch'::regclass)}),
	'1|t', 'the day made is a partition of the batches, with their indexes');
# (the reader's backend gone, its locks with it, before the reload)
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity WHERE query LIKE '%archive-reader%' AND pid <> pg_backend_pid()"
);
pgs_stop_bg($reader);
# once nobody holds them, the archiver's next try (a minute after it left
# them, no reload) drops them
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_class WHERE relname IN ('pgsentinel_archive_batch_$old', 'pgsentinel_archive_text_$old', 'pgsentinel_archive_statement_batch_$old', 'pgsentinel_archive_statement_text_$old')"),
	'raw partitions past retention dropped, texts and statements included');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pgsentinel_archive_text WHERE text = 'old text'"),
	'0', 'the old texts are gone');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pgsentinel_rollup_minute_batch_$old"),
	'1', 'the minute rollups of that day stay');

# 8b. On a repository the archive's parents have DEFAULT partitions (the
# fleet's landing partitions), and ATTACH and DROP of a day lock the DEFAULT
# exclusively, which every reader of the parent holds.  An ordinary role's
# open transaction stops no archiving: the day is left for a later pass,
# status names who holds it, and the day is made once it ends, without a
# reload (a minute later).  The same for an expired day to drop, with only
# the DEFAULT held (a reader whose query reached only that partition).
$node->safe_psql('postgres', qq{
	CREATE ROLE regress_alice LOGIN;
	CREATE TABLE pgsentinel_archive_batch_fleet PARTITION OF pgsentinel_archive_batch DEFAULT;
	DROP TABLE pgsentinel_archive_batch_$tomorrow;});
# After a reload (the archiver looks after its partitions at once): the
# archive goes on, state ok, and the diagnosis says which partitions wait,
# matching the regular expression $waits.
sub archives_while_held
{
	my ($waits, $name) = @_;
	my $before = $node->safe_psql('postgres',
		'SELECT last_sample_id FROM pgsentinel_archive_state');
	$node->reload;
	ok( $node->poll_query_until('postgres', qq{
			SELECT (SELECT last_sample_id > $before FROM pgsentinel_archive_state)
			   AND archive_state = 'ok'
			   AND diagnosis ~ 'partitions wait for a lock $waits'
			  FROM pgsentinel_status()}),
		$name);
}
my $alice = pgs_start_bg($node,
	'BEGIN; SELECT count(*) FROM pgsentinel_ash_history; SELECT pg_sleep(600) /* alice-reader */;',
	user => 'regress_alice');
ok(pgs_wait_sessions($node, 1, '%alice-reader%'), 'alice reads the archive in a transaction');
ok( $node->safe_psql('postgres', q{
		SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		 WHERE a.usename = 'regress_alice' AND l.granted
		   AND l.relation = 'pgsentinel_archive_batch_fleet'::regclass}),
	'her transaction holds the DEFAULT partition');
archives_while_held('\\(1 to attach, 0 expired to drop; tried every minute\\): '
	  . '\\S*pgsentinel_archive_batch_fleet is in use by pid [0-9]+ \\(role regress_alice',
	'with alice holding the DEFAULT partition, archiving goes on and status names her');
is($node->safe_psql('postgres', "SELECT to_regclass('pgsentinel_archive_batch_$tomorrow') IS NULL"),
	't', 'the day is left for later, not made half');
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity WHERE usename = 'regress_alice'");
pgs_stop_bg($alice);
ok( $node->poll_query_until('postgres', qq{
		SELECT to_regclass('pgsentinel_archive_batch_$tomorrow') IS NOT NULL
		   AND EXISTS (SELECT FROM pg_inherits
		                WHERE inhrelid = to_regclass('pgsentinel_archive_batch_$tomorrow'))
		   AND (SELECT diagnosis !~ 'wait for a lock' FROM pgsentinel_status())}),
	'once her transaction ends, the day is attached (no reload) and status says nothing waits');

$node->safe_psql('postgres', qq{
	CREATE TABLE pgsentinel_archive_batch_$old (LIKE pgsentinel_archive_batch);
	ALTER TABLE pgsentinel_archive_batch ATTACH PARTITION pgsentinel_archive_batch_$old
	  FOR VALUES FROM (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp))
	  TO (timezone('UTC', to_date('$old', 'YYYYMMDD')::timestamp + interval '1 day'));});
$reader = pgs_start_bg($node,
	'BEGIN; LOCK TABLE pgsentinel_archive_batch_fleet IN ACCESS SHARE MODE; '
	  . 'SELECT pg_sleep(600) /* default-reader */;');
ok(pgs_wait_sessions($node, 1, '%default-reader%'), 'a reader holds the DEFAULT partition only');
archives_while_held('\\(0 to attach, 1 expired to drop; tried every minute\\): '
	  . '\\S*pgsentinel_archive_batch_fleet is in use by pid',
	'an expired day whose DROP would wait for that reader stops no archiving; status says so');
is($node->safe_psql('postgres', "SELECT to_regclass('pgsentinel_archive_batch_$old') IS NOT NULL"),
	't', 'the expired day is left for later');
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity WHERE query LIKE '%default-reader%' AND pid <> pg_backend_pid()");
pgs_stop_bg($reader);
ok( $node->poll_query_until('postgres',
		"SELECT to_regclass('pgsentinel_archive_batch_$old') IS NULL"),
	'once it ends, the expired day is dropped');
$node->safe_psql('postgres', q{
	DROP TABLE pgsentinel_archive_batch_fleet;
	DROP ROLE regress_alice;});

# 9. A standby writes nothing; promoted, it archives without a restart, and
# no window is archived twice.
$node->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('archive_standby');
$standby->init_from_backup($node, 'bkp', has_streaming => 1);
$standby->start;
$node->wait_for_catchup($standby);
ok( $standby->poll_query_until('postgres',
		"SELECT archive_state = 'standby' FROM pgsentinel_status()"),
	'the standby archiver waits');
is(pgs_status($standby, 'archive_message'), 'standby: the primary archives',
	'standby status message');
is(pgs_status($standby, 'archive_rows'), '0', 'the standby archived nothing');
wait_archived($node, 'before promotion');
$node->wait_for_catchup($standby);
# The archive there is the primary's: the standby's history is its ring.
is( $standby->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM pgsentinel_sample_archive) > 0,
		       (SELECT count(*) FROM pgsentinel_sample_history WHERE source = 'archive'),
		       (SELECT count(*) FROM pgsentinel_ash_history WHERE source = 'archive'),
		       (SELECT count(*) FROM pgsentinel_statements_history WHERE source = 'archive')}),
	't|0|0|0', "the standby's history views read its ring, not the primary's archive");
$node->stop;
$standby->promote;
ok( $standby->poll_query_until('postgres',
		"SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'the promoted standby archives without a restart');
wait_archived($standby, 'after promotion');
check_exactly_once($standby, 'after promotion', $wrapped_at);
is( $standby->safe_psql('postgres',
		'SELECT history_id = pgsentinel_history_id() FROM pgsentinel_archive_state'),
	't', 'the watermark follows the promoted server\'s history');

$standby->stop;
done_testing();
