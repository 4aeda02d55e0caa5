
# Never silent (DESIGN invariant 8) and other sampler behaviour:
#  - a stalled sampler (SIGSTOP) is reported by pgsentinel_status(); when it
#    resumes it counts an overrun and does not burst to catch up;
#  - a reload from a one-hour period back to 10 ms takes effect at once;
#  - a full text area drops old texts: their rows show NULL, never another
#    statement's text, and the diagnosis says so;
#  - parallel workers carry their leader's pid;
#  - without pg_stat_statements preloaded, rows still have query ids and the
#    diagnosis says why there is no statements history.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('diag',
	conf => "pgsentinel_ash.text_area_size = 64\nmax_worker_processes = 16\nmax_parallel_workers = 8\n");

# --- stalled sampler -------------------------------------------------------------

my $wpid = pgs_status($node, 'worker_pid');
ok(pgs_wait_samples($node, 10), 'sampling');
# an active session, so that every sample has a row
my $stall_bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* stallsleep */');
ok(pgs_wait_sessions($node, 1, '%stallsleep%'), 'a session sleeps');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* stallsleep%'"),
	'and is sampled');

# Stop the worker only while it sleeps between samples (never while it holds
# the pgsentinel lock, or the status call below would wait for it).
my $stopped = 0;
foreach my $try (1 .. 50)
{
	kill 'STOP', $wpid;
	# wait until the kernel has stopped it
	my $state = '';
	foreach (1 .. 100)
	{
		$state = (split ' ', slurp_file("/proc/$wpid/stat") =~ s/^.*\) //sr)[0];
		last if $state eq 'T' || $state eq 't';
		select(undef, undef, undef, 0.01);
	}
	my $we = $node->safe_psql('postgres',
		"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $wpid");
	if (($state eq 'T' || $state eq 't') && $we eq 'Extension')
	{
		$stopped = 1;
		last;
	}
	kill 'CONT', $wpid;
}
ok($stopped, 'sampler stopped (SIGSTOP) while sleeping between samples');
my $s_stop = pgs_status($node, 'samples_taken');
my $o_stop = pgs_status($node, 'sample_overruns');
ok( $node->poll_query_until('postgres',
		"SELECT diagnosis ~ 'no sample for .* the sampler is stalled' FROM pgsentinel_status()"),
	'diagnosis reports the stalled sampler');
is(pgs_status($node, 'samples_taken'), $s_stop, 'no sample while stopped');
my $t_stall = pgs_server_time($node);
ok(pgs_wait_until_time($node, $t_stall, 1), 'stalled for one more second');
kill 'CONT', $wpid;
ok($node->poll_query_until('postgres',
		"SELECT samples_taken > $s_stop FROM pgsentinel_status()"),
	'sampling resumes after SIGCONT');
# samples stamped within 100 ms of the first one after the stall: about 10
# at a 10 ms period, all the missed ones (200+) if the sampler caught up
ok( $node->poll_query_until('postgres',
		"SELECT max(ash_time) > min(ash_time) + interval '0.2 s' FROM pg_active_session_history WHERE sample_id > (SELECT max(sample_id) FROM pg_active_session_history WHERE ash_time < '$t_stall')"),
	'samples for 0.2 s after resuming');
my $burst = $node->safe_psql('postgres', qq{
	WITH after AS (SELECT DISTINCT sample_id, ash_time FROM pg_active_session_history
	               WHERE sample_id > (SELECT max(sample_id) FROM pg_active_session_history WHERE ash_time < '$t_stall'))
	SELECT count(*) FROM after WHERE ash_time < (SELECT min(ash_time) FROM after) + interval '100 ms'});
cmp_ok($burst, '<=', 20, "no catch-up burst after a stall of more than 2 s ($burst samples in the first 100 ms)");
cmp_ok(pgs_status($node, 'sample_overruns'), '>', $o_stop, 'the late sample counted as an overrun');
ok($node->poll_query_until('postgres', "SELECT diagnosis ~ '^ok' FROM pgsentinel_status()"),
	'diagnosis ok again');
is(pgs_status($node, 'worker_pid'), $wpid, 'same worker');
pgs_stop_bg($stall_bg);

# --- reload from a long period back to a short one ------------------------------

$node->safe_psql('postgres',
	"ALTER SYSTEM SET pgsentinel_ash.sampling_period = 3600; SELECT pg_reload_conf()");
# applied once no sample comes for 0.5 s
ok( $node->poll_query_until('postgres',
		"SELECT clock_timestamp() - last_sample_time > interval '0.5 s' FROM pgsentinel_status()"),
	'period of one hour applied: samples stop');
my $s_long = pgs_status($node, 'samples_taken');
my $t_reload = pgs_server_time($node);
$node->safe_psql('postgres',
	"ALTER SYSTEM SET pgsentinel_ash.sampling_period = 0.01; SELECT pg_reload_conf()");
ok( $node->poll_query_until('postgres',
		"SELECT samples_taken >= $s_long + 10 FROM pgsentinel_status()"),
	'back to 10 ms: sampling resumes');
my $delay = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM clock_timestamp() - '$t_reload'::timestamptz)");
cmp_ok($delay, '<', 10, "the short period applied at once, not after the hour ($delay s)");

# --- text area overflow -----------------------------------------------------------

# Each statement carries a tag both in its text and in its application_name
# (two different texts of the area): a row may lose a text, never show a
# wrong one.
my $pad = 'y' x 800;
my $script = $node->basedir . '/texts.sql';
append_to_file($script,
	"\\set r random(1, 1000000000)\nSET application_name = 'tag:r';\nSELECT pg_sleep(0.02), 'tag:r' AS tag, '$pad' AS pad /* :r */;\n");
my $tw0 = pgs_server_time($node);
my $h = pgs_pgbench_bg($node, '-n', '-c', '4', '-j', '2', '-T', '6', '-f', $script, 'postgres');
is(pgs_stop_bg($h, wait => 1), 0, 'workload of distinct texts of 850 bytes') or diag $h->{err};
my $tw1 = pgs_server_time($node);
cmp_ok(pgs_status($node, 'texts_dropped'), '>', 0, 'texts were dropped from the 64 kB area');
like(pgs_status($node, 'diagnosis'), qr/texts were dropped .*pgsentinel_ash\.text_area_size/,
	'diagnosis says texts were dropped and what to raise');
# rows of the workload (only pgbench ran in that window); a row whose texts
# were dropped has NULL in both
my $sel = qq{FROM pg_active_session_history
	WHERE backend_type = 'client backend' AND ash_time BETWEEN '$tw0' AND '$tw1'
	  AND (top_level_query IS NULL OR top_level_query LIKE 'SELECT pg_sleep(0.02), ''tag%')};
my $res = $node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE top_level_query IS NULL),
	       count(*) FILTER (WHERE top_level_query IS NOT NULL),
	       count(*) FILTER (WHERE top_level_query IS NOT NULL AND application_name IS NOT NULL
	                        AND top_level_query NOT LIKE '%''' || application_name || '''%'),
	       count(*) FILTER (WHERE top_level_query IS NOT NULL AND top_level_query <>
	         'SELECT pg_sleep(0.02), ''' || substring(top_level_query from '''(tag[0-9]+)''')
	         || ''' AS tag, ''$pad'' AS pad /* ' || substring(top_level_query from '''tag([0-9]+)''') || ' */;')
	$sel});
my ($nulls, $texts, $mismatch, $broken) = split /\|/, $res;
cmp_ok($nulls, '>', 0, "rows whose text was dropped show NULL ($nulls)");
cmp_ok($texts, '>', 0, "recent rows keep their text ($texts)");
is($mismatch, '0', 'no row shows the text of another statement');
is($broken, '0', 'surviving texts are whole and exact');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT pid, query_start FROM pg_active_session_history
	  WHERE top_level_query LIKE 'SELECT pg_sleep(0.02), ''tag%'
	  GROUP BY 1, 2 HAVING count(DISTINCT top_level_query) > 1) s}),
	'0', 'one text per execution (pid, query_start)');

# --- parallel workers ------------------------------------------------------------

$node->safe_psql('postgres', 'CREATE TABLE par AS SELECT g FROM generate_series(1, 200000) g; ANALYZE par');
my $par = pgs_start_bg($node,
	"SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; "
	  . "SELECT count(*) FROM par WHERE pg_sleep(0.0002) IS NOT NULL /* partag */");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) >= 1 FROM pg_stat_activity WHERE backend_type = 'parallel worker' AND query LIKE '%partag%'"),
	'parallel workers running');
my $leader = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND query LIKE '%partag%' AND pid <> pg_backend_pid()");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE backend_type = 'parallel worker' AND leader_pid = $leader"),
	'parallel worker rows carry the leader pid');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE backend_type = 'parallel worker' AND query LIKE '%partag%' AND (leader_pid IS DISTINCT FROM $leader)"),
	'0', 'every parallel worker row of that query has leader_pid = leader');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE pid = $leader AND leader_pid IS NOT NULL AND leader_pid <> $leader"),
	'0', 'the leader has no other leader');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($leader)");
pgs_stop_bg($par, wait => 1);
$node->stop;

# --- without pg_stat_statements --------------------------------------------------

my $bare = pgs_node('nopgss', start => 0);
$bare->append_conf('postgresql.conf',
	"shared_preload_libraries = 'pgsentinel'\npgsentinel_archive.interval = 10s\n");
$bare->start;
# The archiver finds the extension created in its database at its next
# try: until then the status, read there, says "starting", not the stale
# "not created" that another database still shows.
$bare->safe_psql('postgres', 'CREATE DATABASE other');
$bare->safe_psql('other', 'CREATE EXTENSION pgsentinel');
ok( $bare->poll_query_until('other',
		"SELECT archive_state = 'not created' FROM pgsentinel_status()"),
	'the archiver finds no extension in its database');
is( $bare->safe_psql('postgres',
		"BEGIN; CREATE EXTENSION pgsentinel; SELECT archive_state FROM pgsentinel_status(); COMMIT"),
	'starting', 'in the transaction that creates the extension the status says starting');
ok( $bare->poll_query_until('postgres',
		"SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'then ok once the archiver has found it');
my $bg = pgs_start_bg($bare, 'SELECT pg_sleep(600) /* nopgss */');
ok(pgs_wait_sessions($bare, 1, '%nopgss%'), 'session sleeps (no pg_stat_statements)');
ok( $bare->poll_query_until('postgres',
		"SELECT count(*) >= 2 FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* nopgss%' AND wait_event = 'PgSleep'"),
	'sampled without pg_stat_statements');
is( $bare->safe_psql('postgres',
		"SELECT bool_and(queryid IS NOT NULL AND queryid = (SELECT query_id FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(600) /* nopgss%')) FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* nopgss%' AND wait_event = 'PgSleep'"),
	't', 'rows have the query id core computes (compute_query_id)');
ok( $bare->poll_query_until('postgres',
		"SELECT diagnosis ~ '^ok.*pg_stat_statements' FROM pgsentinel_status()"),
	'diagnosis says the statements history needs pg_stat_statements');
pgs_stop_bg($bg);
$bare->stop;

done_testing();
