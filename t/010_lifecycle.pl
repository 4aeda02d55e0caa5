
# Reliability 10: lifecycle.  Sampling starts with the server, before CREATE
# EXTENSION, and does not stop across DROP/CREATE EXTENSION; the history is
# the same from every database; binary-upgrade mode (pg_upgrade) runs no
# sampler.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

# a ring big enough that nothing written during the test is overwritten
my $node = pgs_node('life', create => 0, conf => "pgsentinel_ash.max_entries = 200000\n");

# --- preloaded, extension never created: sampling already runs --------------

ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pgsentinel'"),
	'worker runs before CREATE EXTENSION');
my $wpid = pgs_worker_pid($node);
my $bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* lifesleep */');
ok(pgs_wait_sessions($node, 1, '%lifesleep%'), 'a session sleeps');
# The sampler is watched from another database, where the extension is
# created: its status and the ring are the server's, while the extension
# stays absent from the database the workers use (pgsentinel.db_name,
# postgres).  Wait there for what is checked below, not for a time.
$node->safe_psql('postgres', 'CREATE DATABASE pgs_probe');
$node->safe_psql('pgs_probe', 'CREATE EXTENSION pgsentinel');
ok( $node->poll_query_until('pgs_probe',
		"SELECT samples_taken >= 50 AND (SELECT count(*) FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* lifesleep%') >= 5 FROM pgsentinel_status()"),
	'the sleeper sampled before CREATE EXTENSION (seen from another database)');
my $t_create = pgs_server_time($node);
$node->safe_psql('postgres', 'CREATE EXTENSION pgsentinel');
cmp_ok( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* lifesleep%' AND ash_time < '$t_create'"),
	'>=', 5, 'rows from before CREATE EXTENSION are in the history');
cmp_ok(pgs_status($node, 'samples_taken'), '>=', 50,
	'samples were taken before CREATE EXTENSION');
is(pgs_status($node, 'worker_pid'), $wpid, 'same worker');

# --- DROP EXTENSION / CREATE EXTENSION while sampling -----------------------

my $s_before = pgs_status($node, 'samples_taken');
my $rows_before = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_active_session_history WHERE ash_time < '$t_create'");
my $t_drop = pgs_server_time($node);
$node->safe_psql('postgres', 'DROP EXTENSION pgsentinel');
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM pg_active_session_history');
like($err, qr/does not exist/, 'view gone after DROP EXTENSION');
is(pgs_worker_pid($node), $wpid, 'worker still running after DROP EXTENSION');
ok( $node->poll_query_until('pgs_probe',
		"SELECT samples_taken > $s_before + 20 AND (SELECT count(DISTINCT sample_id) FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* lifesleep%' AND ash_time >= '$t_drop') >= 10 FROM pgsentinel_status()"),
	'samples taken without the extension (seen from another database)');
my $t_recreate = pgs_server_time($node);
$node->safe_psql('postgres', 'CREATE EXTENSION pgsentinel');
cmp_ok(pgs_status($node, 'samples_taken'), '>', $s_before + 20,
	'samples_taken not reset by DROP/CREATE EXTENSION, and kept growing');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE ash_time < '$t_create'"),
	$rows_before, 'rows from before the DROP are still readable');
cmp_ok( $node->safe_psql('postgres',
		"SELECT count(DISTINCT sample_id) FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* lifesleep%' AND ash_time BETWEEN '$t_drop' AND '$t_recreate'"),
	'>=', 10, 'samples were taken while the extension did not exist');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM (
	  SELECT sample_id, lag(sample_id) OVER (ORDER BY sample_id) AS prev
	  FROM (SELECT DISTINCT sample_id FROM pg_active_session_history
	        WHERE query LIKE 'SELECT pg_sleep(600) /* lifesleep%') d) x
	WHERE prev IS NOT NULL AND sample_id <> prev + 1}),
	'0', 'the sleeper is in every sample: sampling never stopped');
is(pgs_status($node, 'worker_pid'), $wpid, 'same worker after DROP/CREATE EXTENSION');

# --- 1.4.0 objects over the running sampler, then ALTER EXTENSION UPDATE -----

$node->safe_psql('postgres', "DROP EXTENSION pgsentinel; CREATE EXTENSION pgsentinel VERSION '1.4.0'");
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel'"),
	'1.4.0', 'extension at 1.4.0');
cmp_ok( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* lifesleep%' AND ash_time < '$t_create'"),
	'>=', 5, '1.4.0 view shows the history, rows from before included');
$node->safe_psql('postgres', 'ALTER EXTENSION pgsentinel UPDATE');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel'"),
	'2.1.0', 'updated to 2.1.0');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM (
	  SELECT sample_id, lag(sample_id) OVER (ORDER BY sample_id) AS prev
	  FROM (SELECT DISTINCT sample_id FROM pg_active_session_history
	        WHERE query LIKE 'SELECT pg_sleep(600) /* lifesleep%') d) x
	WHERE prev IS NOT NULL AND sample_id <> prev + 1}),
	'0', 'after the update: the sleeper is still in every sample');
is(pgs_status($node, 'worker_pid'), $wpid, 'same worker after the update');

# --- the same history from another database ----------------------------------

$node->safe_psql('postgres', 'CREATE DATABASE otherdb');
$node->safe_psql('otherdb', 'CREATE EXTENSION pgsentinel');
ok( $node->poll_query_until('otherdb',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE datname = 'postgres' AND query LIKE 'SELECT pg_sleep(600) /* lifesleep%'"),
	'history read from another database shows the sessions of postgres');
$node->safe_psql('otherdb', 'DROP EXTENSION pgsentinel');
is(pgs_worker_pid($node), $wpid, 'dropping it in one database changes nothing');
pgs_stop_bg($bg);

# --- binary-upgrade mode: no sampler -------------------------------------------

$node->stop;
my $log_off = -s $node->logfile;
command_ok(
	[ 'pg_ctl', '-D', $node->data_dir, '-l', $node->logfile, '-w', '-o', '-b', 'start' ],
	'start in binary-upgrade mode (postgres -b)');
$node->_update_pid(1);
is($node->safe_psql('postgres', 'SELECT current_setting(\'is_superuser\')'), 'on', 'connected in binary-upgrade mode');
# wait until the server has settled: the checkpointer and the walwriter are up
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type IN ('checkpointer', 'walwriter')"),
	'auxiliary processes up');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pgsentinel'"),
	'0', 'no pgsentinel worker in pg_stat_activity');
my ($pspid) = slurp_file($node->data_dir . '/postmaster.pid') =~ /^(\d+)/;
my $children = `ps -o args= --ppid $pspid`;
# (a worker's title ends with its name; backends of the test's OS user,
# pgsentinel_test, closing meanwhile are not workers)
unlike($children, qr/: pgsentinel(?: sampler| statements)?\s*$/m,
	"no pgsentinel child of the postmaster ($pspid)");
like( $node->safe_psql('postgres', 'SELECT coalesce(worker_pid::text, \'none\') || \' \' || diagnosis FROM pgsentinel_status()'),
	qr/^none the sampler worker is not running/, 'status says no worker in binary-upgrade mode');
unlike(substr(slurp_file($node->logfile), $log_off), qr/pgsentinel sampler started/,
	'no "sampler started" in the log');
$node->stop;

# back to normal
$node->start;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pgsentinel'"),
	'worker back after a normal start');
ok(pgs_wait_samples($node, 5), 'sampling again');
$node->stop;
done_testing();
