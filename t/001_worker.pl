
# The sampler worker: visible, sampling, restarted after a kill, follows a
# reload of the sampling period; and the clear error without preloading.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('main');

# --- the worker is there and samples ---------------------------------------

ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pgsentinel'"),
	'one pgsentinel worker in pg_stat_activity');
my $wpid = pgs_worker_pid($node);
is(pgs_status($node, 'worker_pid'), $wpid,
	'pgsentinel_status().worker_pid is the pg_stat_activity worker');
like(
	$node->safe_psql('postgres',
		"SELECT backend_type || '|' || coalesce(datname, '<none>') FROM pg_stat_activity WHERE pid = $wpid"),
	qr/^pgsentinel\|/,
	'worker backend_type is pgsentinel');

my $s0 = pgs_status($node, 'samples_taken');
ok(pgs_wait_samples($node, 20), "samples_taken grows (from $s0)");
ok($node->poll_query_until('postgres', "SELECT diagnosis ~ '^ok|no session was active' FROM pgsentinel_status()"),
	'diagnosis says sampling works');

# a session that stays active so that every sample has a row
my $sleeper = pgs_start_bg($node, "SELECT pg_sleep(600) /* sleeper1 */");
ok(pgs_wait_sessions($node, 1, '%sleeper1%'), 'sleeping session started');
ok( $node->poll_query_until('postgres',
		"SELECT count(DISTINCT sample_id) >= 5 FROM pg_active_session_history WHERE query LIKE '%sleeper1%'"),
	'the sleeping session is in the history');
# (a sleeping backend may be caught on CPU for an instant when its latch is
# set, so most rows, not all, show the sleep)
is( $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE wait_event_type || '/' || wait_event || '/' || state = 'Timeout/PgSleep/active') > count(*) / 2 FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* sleeper1%'"),
	't',
	'sleeper sampled with its wait event (Timeout/PgSleep/active)');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT sample_id FROM pg_active_session_history GROUP BY sample_id HAVING count(DISTINCT ash_time) > 1) s"),
	'0',
	'all rows of a sample share ash_time');
like(pgs_status($node, 'diagnosis'), qr/^ok/, 'diagnosis ok with rows');

# --- reload changes the sampling period ------------------------------------

$node->safe_psql('postgres',
	"ALTER SYSTEM SET pgsentinel_ash.sampling_period = 1; SELECT pg_reload_conf()");
# status shows the period the sampler published, once it handled the SIGHUP
ok( $node->poll_query_until('postgres',
		"SELECT sampling_period = 1 FROM pgsentinel_status()"),
	'period 1 s after reload');
# the worker has applied it when two consecutive samples are >= 0.9 s apart
ok( $node->poll_query_until('postgres',
		"SELECT coalesce(max(g) >= interval '0.9 s', false) FROM (SELECT ash_time, ash_time - lag(ash_time) OVER (ORDER BY sample_id) AS g FROM (SELECT DISTINCT sample_id, ash_time FROM pg_active_session_history WHERE query LIKE '%sleeper1%') d) x WHERE g IS NOT NULL AND ash_time > now() - interval '10 s'"),
	'worker applied the 1 s period');
# samples_taken and the server clock read together
my $snap = sub {
	return split /\|/, $node->safe_psql('postgres',
		"SELECT samples_taken, extract(epoch FROM clock_timestamp()), clock_timestamp() FROM pgsentinel_status()");
};
my ($n1, $e1, $t1) = $snap->();
ok(pgs_wait_until_time($node, $t1, 3), 'waited 3 s at 1 s period');
my ($n1b, $e1b) = $snap->();
my $el1 = $e1b - $e1;
# Samples follow a plan (each planned a period after the one before, taken
# at or after its planned time, less than a period late): a window of el
# seconds holds those planned in (start - 1 s, end], at most int(el) + 2.
# An extra sample (sampling on a wakeup, or at the old period) exceeds it.
cmp_ok($n1b - $n1, '<=', int($el1) + 2, sprintf("at 1 s: at most %d samples in %.2f s (got %d)", int($el1) + 2, $el1, $n1b - $n1));
cmp_ok($n1b - $n1, '>=', 1, "at 1 s: at least 1 sample in 3 s");
# The median gap, not the smallest: a late sample is followed by one on
# plan, less than a period after it.  A sampler still at 0.01 s, or one
# sampling on wakeups, has a median gap far below 0.5 s.
my $gap1 = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY g)) FROM (SELECT ash_time - lag(ash_time) OVER (ORDER BY sample_id) AS g FROM (SELECT DISTINCT sample_id, ash_time FROM pg_active_session_history WHERE query LIKE '%sleeper1%' AND ash_time >= '$t1') d) x WHERE g IS NOT NULL");
cmp_ok($gap1, '>=', 0.5, "at 1 s: median gap between samples at least 0.5 s ($gap1)");

$node->safe_psql('postgres',
	"ALTER SYSTEM SET pgsentinel_ash.sampling_period = 0.05; SELECT pg_reload_conf()");
ok( $node->poll_query_until('postgres',
		"SELECT sampling_period = 0.05 FROM pgsentinel_status()"),
	'period 0.05 s after reload');
# applied when a sample comes less than 0.3 s after the previous one
ok( $node->poll_query_until('postgres',
		"SELECT coalesce(bool_or(g < interval '0.3 s'), false) FROM (SELECT ash_time - lag(ash_time) OVER (ORDER BY sample_id) AS g FROM (SELECT DISTINCT sample_id, ash_time FROM pg_active_session_history WHERE query LIKE '%sleeper1%' AND ash_time > now() - interval '5 s') d) x"),
	'worker applied the 0.05 s period');
my ($n2, $e2, $t2) = $snap->();
ok(pgs_wait_until_time($node, $t2, 2), 'waited 2 s at 0.05 s period');
my ($n2b, $e2b) = $snap->();
my $el2 = $e2b - $e2;
# At least: a bound a sampler left at 1 s (4 samples in 2 s at most)
# crosses, not a measure of the machine's speed (40 expected).
cmp_ok($n2b - $n2, '>=', 5, sprintf("at 0.05 s: at least 5 samples in %.2f s (got %d)", $el2, $n2b - $n2));
cmp_ok($n2b - $n2, '<=', int($el2 / 0.05) + 2, sprintf("at 0.05 s: at most %d samples in %.2f s", int($el2 / 0.05) + 2, $el2));
my $gap2 = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY g)) FROM (SELECT ash_time - lag(ash_time) OVER (ORDER BY sample_id) AS g FROM (SELECT DISTINCT sample_id, ash_time FROM pg_active_session_history WHERE query LIKE '%sleeper1%' AND ash_time >= '$t2') d) x WHERE g IS NOT NULL");
# (a sampler left at 1 s has a median gap of 1 s; 0.05 s expected)
cmp_ok($gap2, '<', 0.5, "at 0.05 s: median gap between samples below 0.5 s ($gap2)");
cmp_ok($gap2, '>=', 0.04, "at 0.05 s: median gap not below the period ($gap2)");

$node->safe_psql('postgres',
	"ALTER SYSTEM SET pgsentinel_ash.sampling_period = 0.01; SELECT pg_reload_conf()");
ok( $node->poll_query_until('postgres',
		"SELECT sampling_period = 0.01 FROM pgsentinel_status()"),
	'back to 0.01 s');

# --- worker exits with an error (pg_terminate_backend): restarted ~10 s later

$wpid = pgs_status($node, 'worker_pid');
my $log_off = -s $node->logfile;
ok($node->safe_psql('postgres', "SELECT pg_terminate_backend($wpid)") eq 't',
	'terminate the worker');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $wpid"),
	'old worker gone');
like(
	$node->safe_psql('postgres', "SELECT coalesce(worker_pid::text, 'none') || ' ' || diagnosis FROM pgsentinel_status()"),
	qr/^none the sampler worker is not running/,
	'diagnosis says the worker is not running');
ok( $node->poll_query_until('postgres',
		"SELECT worker_pid IS NOT NULL AND worker_pid <> $wpid FROM pgsentinel_status()"),
	'a new worker was started by the postmaster');
ok(pgs_wait_samples($node, 10), 'sampling resumed after terminate');
unlike(substr(slurp_file($node->logfile), $log_off),
	qr/FATAL:.*terminating background worker "pgsentinel/,
	'terminated quietly: no FATAL');
ok($node->safe_psql('postgres', 'SELECT 1') eq '1', 'server up');

# --- SIGKILL of the worker: crash cycle, new worker, new rows ---------------

$wpid = pgs_status($node, 'worker_pid');
my $max_sid = $node->safe_psql('postgres',
	'SELECT max(sample_id) FROM pg_active_session_history');
$log_off = -s $node->logfile;
is(kill('KILL', $wpid), 1, "SIGKILL worker $wpid");
ok( $node->wait_for_log(qr/terminated by signal 9|all server processes terminated; reinitializing/, $log_off),
	'postmaster noticed the crash');
ok( $node->poll_query_until('postgres',
		"SELECT worker_pid IS NOT NULL AND worker_pid <> $wpid FROM pgsentinel_status()"),
	'new worker after the crash cycle');
my $newpid = pgs_status($node, 'worker_pid');
isnt($newpid, $wpid, "new worker pid $newpid");
is(pgs_worker_pid($node), $newpid, 'pg_stat_activity shows the new worker');
ok(pgs_wait_samples($node, 10), 'samples_taken grows after the crash');
pgs_stop_bg($sleeper);
$sleeper = pgs_start_bg($node, "SELECT pg_sleep(600) /* sleeper2 */");
ok(pgs_wait_sessions($node, 1, '%sleeper2%'), 'new sleeping session');
ok( $node->poll_query_until('postgres',
		"SELECT count(DISTINCT sample_id) >= 3 FROM pg_active_session_history WHERE query LIKE '%sleeper2%'"),
	'new rows after the crash');
ok($node->poll_query_until('postgres', "SELECT diagnosis ~ '^ok' FROM pgsentinel_status()"),
	'diagnosis ok after the crash');
pgs_stop_bg($sleeper);

# --- without shared_preload_libraries ---------------------------------------

my $plain = pgs_node('nopreload', preload => 0);
is($plain->psql('postgres', 'CREATE EXTENSION pgsentinel'), 0,
	'CREATE EXTENSION works without preloading');
my ($ret, $out, $err) =
  $plain->psql('postgres', 'SELECT count(*) FROM pg_active_session_history');
isnt($ret, 0, 'reading the view fails without preloading');
like($err, qr/shared_preload_libraries/, 'error names shared_preload_libraries');
($ret, $out, $err) =
  $plain->psql('postgres', 'SELECT * FROM pgsentinel_status()');
isnt($ret, 0, 'pgsentinel_status() fails without preloading');
like($err, qr/shared_preload_libraries/, 'status error names shared_preload_libraries');
is($plain->safe_psql('postgres', 'SELECT 1'), '1', 'server still up');
is( $plain->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pgsentinel'"),
	'0',
	'no worker without preloading');
unlike(slurp_file($plain->logfile), qr/server process .* terminated by signal/,
	'no crash in the log of the non-preloaded node');

$plain->stop;

# --- a clean shutdown: the workers stop quietly -------------------------------

ok($node->poll_query_until('postgres', "SELECT pgssh_state = 'ok' FROM pgsentinel_status()"),
	'both workers running before the shutdown');
$log_off = -s $node->logfile;
$node->stop('fast');
my $shutdown_log = substr(slurp_file($node->logfile), $log_off);
like($shutdown_log, qr/database system is shut down/, 'shut down');
unlike($shutdown_log, qr/FATAL:  terminating background worker/,
	'no FATAL from the workers at shutdown');
like($shutdown_log, qr/background worker "pgsentinel" \(PID \d+\) exited with exit code 1/,
	'the sampler exited as core\'s logical replication launcher does');
done_testing();
