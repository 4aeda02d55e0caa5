
# The statements-history worker ("pgsentinel statements"), launched by the
# sampler in pgsentinel.db_name: it survives being terminated or killed,
# reports a missing pg_stat_statements once and recovers when it is created,
# and follows pgsentinel_pgssh.enable.  ASH sampling never depends on it.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('pgssh');

my $worker_sql =
  "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pgsentinel statements'";

ok( $node->poll_query_until('postgres',
		"SELECT pgssh_state = 'ok' FROM pgsentinel_status()"),
	'statements history ok');
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($worker_sql) s"),
	'statements worker in pg_stat_activity');
my $spid = $node->safe_psql('postgres', $worker_sql);
is(pgs_status($node, 'pgssh_worker_pid'), $spid, 'status shows its pid');

my $bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* pgsshsleep */');
ok(pgs_wait_sessions($node, 1, '%pgsshsleep%'), 'a session sleeps');
# pg_stat_statements knows a statement once an execution has completed: run
# short ones for a while
my $script = $node->basedir . '/short.sql';
append_to_file($script, "SELECT pg_sleep(0.02) /* pgsshshort */;\n");
my $pb = pgs_pgbench_bg($node, '-n', '-c', '2', '-T', '3', '-f', $script, 'postgres');
is(pgs_stop_bg($pb, wait => 1), 0, 'short statements ran');
my $qid = $node->safe_psql('postgres',
	"SELECT queryid FROM pg_stat_statements WHERE query LIKE 'SELECT pg_sleep(\$1) /* pgsshshort%'");
like($qid, qr/^-?\d+$/, "pg_stat_statements has the statement ($qid)");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_statements_history WHERE queryid = $qid AND calls > 0"),
	'statements history has rows for the sampled statement');

# wait until the statements history has taken $n more samples
sub pgssh_grows
{
	my ($n) = @_;
	my $s = pgs_status($node, 'pgssh_samples');
	return $node->poll_query_until('postgres',
		"SELECT pgssh_samples >= $s + $n FROM pgsentinel_status()");
}
ok(pgssh_grows(5), 'statements samples grow');

# --- terminated: launched again ------------------------------------------------

my $ash_wpid = pgs_status($node, 'worker_pid');
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($spid)"), 't',
	'terminate the statements worker');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM ($worker_sql) s WHERE pid <> $spid"),
	'a new statements worker is launched');
$spid = $node->safe_psql('postgres', $worker_sql);
ok(pgssh_grows(5), 'statements samples grow again');
is(pgs_status($node, 'worker_pid'), $ash_wpid, 'the sampler was not affected');
ok($node->poll_query_until('postgres', "SELECT pgssh_state = 'ok' FROM pgsentinel_status()"),
	'state ok');

# --- a statement that ends while the statements worker is starting: its
# final reading waits, merged into the requests, until the worker is ready.
# The new worker is held in "starting" by a lock on pg_extension, which it
# reads before it can serve anything.

$node->safe_psql('postgres', q{
CREATE FUNCTION relaunch_probe() RETURNS void LANGUAGE plpgsql AS $$
DECLARE deadline timestamptz := clock_timestamp() + interval '60 s';
        body_start timestamptz := clock_timestamp();  -- executed: has its query id
BEGIN
  LOOP
    PERFORM pg_sleep(0.01);
    EXIT WHEN EXISTS (SELECT 1 FROM pg_active_session_history
                      WHERE pid = pg_backend_pid() AND query_start = statement_timestamp()
                        AND ash_time >= body_start)
           OR clock_timestamp() > deadline;
  END LOOP;
END $$});
my $log_off = -s $node->logfile;
my $locker = pgs_start_bg($node,
	'BEGIN; LOCK TABLE pg_extension IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600) /* extlock */');
ok(pgs_wait_sessions($node, 1, '%extlock%'), 'pg_extension locked');
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($spid)"), 't',
	'terminate the statements worker again');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM ($worker_sql) s WHERE pid <> $spid"),
	'a new statements worker is launched');
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE backend_type = 'pgsentinel statements' AND wait_event_type = 'Lock'}),
	'it waits for pg_extension');
# (pgsentinel_status() never waits for the lock on pg_extension)
is( $node->safe_psql('postgres',
		"SET statement_timeout = '60s'; SELECT pgssh_state FROM pgsentinel_status()"),
	'starting', 'state: starting, read without waiting for pg_extension');
$node->safe_psql('postgres', 'SELECT relaunch_probe()');
my $ended = $node->safe_psql('postgres', 'SELECT max(sample_id) FROM pg_active_session_history');
ok( $node->poll_query_until('postgres',
		"SELECT max(sample_id) > $ended + 5 FROM pg_active_session_history"),
	'samples after the statement ended');
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%extlock%' AND pid <> pg_backend_pid()");
pgs_stop_bg($locker);
ok($node->poll_query_until('postgres', "SELECT pgssh_state = 'ok' FROM pgsentinel_status()"),
	'ready once pg_extension is free');
my $probe_qid = $node->safe_psql('postgres',
	"SELECT queryid FROM pg_stat_statements WHERE query = 'SELECT relaunch_probe()'");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_statements_history WHERE queryid = $probe_qid AND calls = 1"),
	'the final reading of the statement is served by the new worker');
$spid = $node->safe_psql('postgres', $worker_sql);
unlike(substr(slurp_file($node->logfile), $log_off),
	qr/FATAL:  terminating background worker/,
	'terminated quietly: no FATAL');

# --- killed: crash cycle, both workers back -------------------------------------

$log_off = -s $node->logfile;
is(kill('KILL', $spid), 1, 'SIGKILL the statements worker');
ok($node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_off),
	'crash cycle');
pgs_stop_bg($bg);
ok( $node->poll_query_until('postgres',
		"SELECT worker_pid IS NOT NULL AND worker_pid <> $ash_wpid AND pgssh_state = 'ok' FROM pgsentinel_status()"),
	'sampler and statements history back after the crash');
$bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* pgsshsleep2 */');
ok(pgs_wait_sessions($node, 1, '%pgsshsleep2%'), 'a session sleeps again');
ok(pgssh_grows(5), 'statements samples grow after the crash');

# --- pg_stat_statements dropped, then created again ----------------------------

$log_off = -s $node->logfile;
$node->safe_psql('postgres', 'DROP EXTENSION pg_stat_statements');
ok( $node->poll_query_until('postgres',
		"SELECT pgssh_state = 'pg_stat_statements not created' FROM pgsentinel_status()"),
	'state: pg_stat_statements not created');
like(pgs_status($node, 'diagnosis'),
	qr/^ok; statements history: .*CREATE EXTENSION pg_stat_statements/,
	'diagnosis says to create pg_stat_statements');
ok(pgs_wait_samples($node, 100), 'ASH sampling goes on without it');
my $t = pgs_server_time($node);
ok(pgs_wait_until_time($node, $t, 3), 'three more seconds');
my $warnings = () = substr(slurp_file($node->logfile), $log_off) =~ /(?:WARNING|LOG):  pgsentinel statements history: pg_stat_statements is not created/g;
cmp_ok($warnings, '>=', 1, "the missing extension is logged ($warnings lines)");
cmp_ok($warnings, '<=', 2, "the missing extension is logged once, not every period ($warnings lines)");
my $t_create = pgs_server_time($node);
$node->safe_psql('postgres', 'CREATE EXTENSION pg_stat_statements');
ok($node->poll_query_until('postgres', "SELECT pgssh_state = 'ok' FROM pgsentinel_status()"),
	'back to ok after CREATE EXTENSION pg_stat_statements');
my $recover = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM clock_timestamp() - '$t_create'::timestamptz)");
note "statements history recovered $recover s after CREATE EXTENSION";
cmp_ok($recover, '<', 30, "recovered within 30 s ($recover s)");
ok(pgssh_grows(5), 'statements samples grow after re-creation');

# --- pgsentinel_pgssh.enable off and on ------------------------------------------

$node->safe_psql('postgres',
	"ALTER SYSTEM SET pgsentinel_pgssh.enable = off; SELECT pg_reload_conf()");
ok($node->poll_query_until('postgres', "SELECT pgssh_state = 'disabled' FROM pgsentinel_status()"),
	'state disabled after enable = off');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM ($worker_sql) s"),
	'statements worker gone');
my $s_off = pgs_status($node, 'pgssh_samples');
ok(pgs_wait_samples($node, 50), 'ASH sampling goes on');
is(pgs_status($node, 'pgssh_samples'), $s_off, 'no statements sample while disabled');
like(pgs_status($node, 'diagnosis'), qr/^ok$/, 'diagnosis plain ok when disabled');
$node->safe_psql('postgres',
	"ALTER SYSTEM SET pgsentinel_pgssh.enable = on; SELECT pg_reload_conf()");
ok($node->poll_query_until('postgres', "SELECT pgssh_state = 'ok' FROM pgsentinel_status()"),
	'state ok after enable = on');
ok(pgssh_grows(5), 'statements samples grow again');

# --- an expensive reading: the worker rests 9 times as long ---------------------
# pg_stat_statements(false) builds every entry: with 4000 entries a reading
# takes milliseconds, comparable with the 10 ms period.  Without the rest the
# worker would read at nearly every sample; with it at most 1 sample in
# 1 + 9 * (reading / period).

$node->safe_psql('postgres', q{
DO $$BEGIN FOR i IN 1..4000 LOOP
  EXECUTE format('CREATE FUNCTION pgssh_f%s() RETURNS int LANGUAGE sql AS ''SELECT %s''', i, i);
END LOOP; END$$});
$node->safe_psql('postgres', join('', map { "SELECT pgssh_f$_();\n" } 1 .. 4000));
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM pg_stat_statements'), '>=', 4000,
	'pg_stat_statements holds 4000 entries');
# short statements while we count: each sample asks for them
my $pb2 = pgs_pgbench_bg($node, '-n', '-c', '2', '-T', '60', '-f', $script, 'postgres');
ok(pgssh_grows(3), 'readings go on');
my ($s0, $r0, $k0) = split /\|/, $node->safe_psql('postgres',
	'SELECT samples_taken, pgssh_samples, pgssh_requests_skipped FROM pgsentinel_status()');
ok(pgs_wait_samples($node, 300), '300 samples');
my ($s1, $r1, $k1, $last_us, $dropped) = split /\|/, $node->safe_psql('postgres',
	'SELECT samples_taken, pgssh_samples, pgssh_requests_skipped, pgssh_last_us, pgssh_keys_dropped FROM pgsentinel_status()');
my ($samples, $readings) = ($s1 - $s0, $r1 - $r0);
note "$readings readings in $samples samples, last reading $last_us us";
cmp_ok($readings, '>', 0, 'the statements history is still read');
cmp_ok($k1 - $k0, '>', 0, 'requests made while the worker rests are merged (counted as skipped)');
is($dropped, 0, 'no final reading dropped');
SKIP:
{
	skip "a reading took $last_us us: too short to tell resting from keeping up", 1
	  if $last_us < 2000;
	# each reading of >= 2 ms is followed by >= 18 ms of rest: >= 2 samples per reading
	cmp_ok($readings, '<=', 0.6 * $samples,
		"at most one reading per two samples ($readings in $samples)");
}
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_statements_history WHERE queryid = $qid "
		  . "AND ash_time > now() - interval '2 s'"),
	'the sampled statement is still read, at the worker\'s pace');
pgs_stop_bg($pb2);
$node->safe_psql('postgres', q{
DO $$BEGIN FOR i IN 1..4000 LOOP
  EXECUTE format('DROP FUNCTION pgssh_f%s()', i);
END LOOP; END$$});
pgs_stop_bg($bg);

my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP/, 'no PANIC');
my @crash = $log =~ /(terminated by signal \d+)/g;
is(scalar(@crash), 1, 'one crash in the log: the SIGKILL of the test');

$node->stop;
done_testing();
