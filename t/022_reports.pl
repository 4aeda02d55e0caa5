
# The reports on a real workload: four sleeping sessions, a CPU loop, and a
# lock chain whose root is idle in transaction, at the default settings
# (track_idle_trans off: the root is sampled because it blocks).  The
# report of the window names the root blocker whole (role, application,
# statement, transaction start), the top wait event and the top statement,
# as text, JSON and HTML; the root's idle time is not load.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('reports',
	conf => "pgsentinel_ash.sampling_period = 0.05\n"
	  . "pgsentinel_archive.interval = 200ms\n"
	  # every sample archived: the answers below average ten samples, not
	  # the one or two in ten the default keeps
	  . "pgsentinel_archive.keep_one_in = 1\n");
$node->safe_psql('postgres',
	'CREATE TABLE rep_t (id int PRIMARY KEY, v int); INSERT INTO rep_t VALUES (1, 0)');

my $t0 = pgs_server_time($node);

# the root: a transaction left idle holding the row lock
my $root = pgs_start_interactive($node,
	"SET application_name = 'ops-console';\nSELECT pg_backend_pid();\nBEGIN;\nUPDATE rep_t SET v = v + 1 WHERE id = 1;\n");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE 'UPDATE rep_t%'"),
	'root idle in transaction');
my $root_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE 'UPDATE rep_t%'");

# two waiters in a chain behind it, four sleepers (more than the three
# sessions of the UPDATE, whose root and waiters share a query id: a tie
# would be broken by the query ids' order), one CPU loop
my @bg;
push @bg, pgs_start_bg($node, 'UPDATE rep_t SET v = v + 2 WHERE id = 1 /* rep_waiter */');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%rep_waiter */'"),
	'first waiter blocked');
push @bg, pgs_start_bg($node, 'UPDATE rep_t SET v = v + 3 WHERE id = 1 /* rep_waiter2 */');
push @bg, pgs_start_bg($node, "SELECT pg_sleep(300) /* rep_sleep */") for 1 .. 4;
push @bg, pgs_start_bg($node,
	'DO $$BEGIN LOOP PERFORM 1; END LOOP; END$$ /* rep_cpu */');
ok(pgs_wait_sessions($node, 4, '%rep_sleep */'), 'four sleepers');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%rep_waiter%'"),
	'second waiter blocked');

# the window: from when everything ran until ten samples with all of it,
# and the root sampled idle in transaction (averages over one or two
# samples would move with a sleeper caught on CPU for an instant)
my $t1 = pgs_server_time($node);
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) >= 10 FROM (
		  SELECT sample_id FROM pgsentinel_ash('$t1', now())
		  GROUP BY sample_id
		  HAVING count(*) FILTER (WHERE query LIKE '%rep_sleep */') = 4
		     AND count(*) FILTER (WHERE wait_event_type = 'Lock') = 2
		     AND count(*) FILTER (WHERE pid = $root_pid AND state = 'idle in transaction') = 1) s}),
	'ten samples with the whole workload');
my $t2 = $node->safe_psql('postgres', 'SELECT now()');
my $window = "'$t1', '$t2'";
my $root_xact = $node->safe_psql('postgres',
	"SELECT xact_start FROM pg_stat_activity WHERE pid = $root_pid");

# the root was sampled (idle in transaction, because it blocked) but is
# not load: seven active sessions (four sleepers, the loop, two waiters)
is( $node->safe_psql('postgres', qq{
		SELECT concat_ws('|', count(*) > 0, sum(weight))
		  FROM pgsentinel_ash($window) WHERE pid = $root_pid}),
	't|0', "the root's rows weigh nothing");
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pgsentinel_top($window, 'session', 100) WHERE key = '$root_pid'"),
	'0', 'the root is not a top session');
cmp_ok( $node->safe_psql('postgres', "SELECT aas FROM pgsentinel_aas($window)"),
	'<', 7.9, 'the AAS is that of the seven active sessions, not eight');

# the tops, from the functions
is( $node->safe_psql('postgres',
		"SELECT key FROM pgsentinel_top($window, 'wait_event') WHERE rank = 1"),
	'Timeout:PgSleep', 'top wait event: the sleepers');
like( $node->safe_psql('postgres',
		"SELECT query FROM pgsentinel_top_statements($window) WHERE rank = 1"),
	qr/pg_sleep.*rep_sleep/, 'top statement: the sleepers');
is( $node->safe_psql('postgres',
		"SELECT concat_ws('|', root_pid, state, sessions, levels) FROM pgsentinel_blocking_trees($window) WHERE depth = 0 ORDER BY db_time DESC LIMIT 1"),
	"$root_pid|idle in transaction|2|2",
	'root blocker: the idle transaction, two sessions behind it on two levels');
is( $node->safe_psql('postgres', qq{
		SELECT concat_ws('|', usename = current_user, application_name,
		                 xact_start = '$root_xact', first_seen < last_seen,
		                 first_seen >= '$t1')
		  FROM pgsentinel_blocking_trees($window) WHERE depth = 0 AND root_pid = $root_pid}),
	't|ops-console|t|t|t',
	"the root's role, application and transaction start, and when it blocked");
like( $node->safe_psql('postgres',
		"SELECT query FROM pgsentinel_blocking_trees($window) WHERE depth = 0 AND root_pid = $root_pid"),
	qr/UPDATE rep_t SET v = v \+ 1/, "the root's last statement");
cmp_ok( $node->safe_psql('postgres',
		"SELECT aas FROM pgsentinel_aas($window, by => 'wait_class') WHERE key = 'Timeout'"),
	'>', 3.5, 'four sleepers make about 4 active sessions of Timeout');

# the report, in each format
my $text = $node->safe_psql('postgres', "SELECT pgsentinel_report($window)");
like($text,
	qr/root blocker pid $root_pid \(\w+, application ops-console, client local, idle in transaction, in a transaction since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\): 2 sessions behind it from \d\d:\d\d:\d\d to \d\d:\d\d:\d\d \(\d\d:\d\d:\d\d\).*\n\s+UPDATE rep_t SET v = v \+ 1/,
	'text report names the root blocker whole');
like($text, qr/== Top wait events\n.*\n  Timeout:PgSleep /,
	'text report: the top wait event first');
like($text, qr/== Top SQL\n.*\n.*\n\s+SELECT pg_sleep\(300\) \/\* rep_sleep \*\//,
	'text report: the top statement first');
my $json = $node->safe_psql('postgres', qq{
	SELECT concat_ws('|', r->'top_events'->0->>'key', r->'blocking_trees'->0->>'root_pid',
	                 r->'top_statements'->0->>'query' LIKE '%rep_sleep%',
	                 r->'blocking_trees'->0->>'application_name',
	                 (r->'blocking_trees'->0->>'xact_start')::timestamptz = '$root_xact',
	                 r->'blocking_trees'->0->>'query' LIKE 'UPDATE rep_t SET v = v + 1%')
	FROM (SELECT pgsentinel_report($window, 'json')::jsonb AS r) x});
is($json, "Timeout:PgSleep|$root_pid|t|ops-console|t|t", 'JSON report: the same answers');
my $html = $node->safe_psql('postgres',
	"SELECT pgsentinel_report($window, 'html', cpus => 2)");
like($html, qr/<path class="series" data-class="Timeout"/, 'HTML report: the Timeout area');
like($html, qr/<path class="series" data-class="Lock"/, 'HTML report: the Lock area');
like($html, qr/<line class="cpus"/, 'HTML report: the CPU line');
like($html, qr/<td class="tree">$root_pid<\/td>.*ops-console.*idle in transaction.*UPDATE rep_t SET v = v \+ 1.*<td class="tree">&#9492;&#9472;&#9472; \d+<\/td>.*<td class="tree">    &#9492;&#9472;&#9472; \d+<\/td>/s,
	'HTML report: the root blocker, its application, state and statement; the tree drawn');
unlike($html, qr/(src=|href=|url\(|<script)/i, 'HTML report: nothing to fetch');

# the archiver keeps the blocking trees of what it archived by minute, once
# a minute has ended, and by hour, once an hour has ended (from its
# minutes): the same parts as computed from the archived rows before
# rolled_until and hours_rolled_until (in one snapshot; sql/archive.sql
# closes an hour of several minutes)
ok( $node->poll_query_until('postgres',
		"SELECT rolled_until > '$t2' FROM pgsentinel_archive_state"),
	'the window archived and rolled up');
is( $node->safe_psql('postgres', q{
	WITH r AS (
	    SELECT bucket, kind, root_pid, pid, key_usesysid, depth, blocked_by,
	           samples, round(db_time::numeric, 6) AS db_time, last_time,
	           usesysid, usename, state, wait_event_type, wait_event, query,
	           first_time, application_name, client_addr, xact_start
	    FROM pgsentinel_blocking_hour
	), c AS (
	    SELECT bucket, kind, root_pid, pid, key_usesysid, depth, blocked_by,
	           samples, round(db_time::numeric, 6) AS db_time, last_time,
	           usesysid, usename, state, wait_event_type, wait_event, query,
	           first_time, application_name, client_addr, xact_start
	    FROM pgsentinel_blocking_parts((
	        SELECT jsonb_agg(jsonb_build_object(
	                   'ash_time', x.ash_time, 'sample_id', x.sample_id, 'pid', x.pid,
	                   'weight', x.weight, 'usesysid', x.usesysid, 'usename', x.usename,
	                   'application_name', x.application_name, 'client_addr', x.client_addr,
	                   'xact_start', x.xact_start, 'state', x.state, 'wait_event_type', x.wait_event_type,
	                   'wait_event', x.wait_event, 'query', x.top_level_query,
	                   'blocking', CASE WHEN cardinality(x.blocking_pids) > 0 THEN x.blocking_pids
	                                    WHEN x.blockerpid IS NOT NULL THEN ARRAY[x.blockerpid] END,
	                   'blockerpid', x.blockerpid, 'blocker_state', x.blocker_state,
	                   'blocker_usesysid', x.blocker_usesysid))
	        FROM pgsentinel_ash_archive x
	        WHERE x.blocked_sample
	          AND x.ash_time < (SELECT hours_rolled_until FROM pgsentinel_archive_state)), 'hour')
	)
	SELECT (SELECT count(*) FROM ((TABLE r EXCEPT ALL TABLE c)
	                              UNION ALL (TABLE c EXCEPT ALL TABLE r)) d)}),
	"0", 'blocking rollup by hour: the parts of the archived rows');
is( $node->safe_psql('postgres', q{
	WITH r AS (
	    SELECT bucket, kind, root_pid, pid, key_usesysid, depth, blocked_by,
	           samples, round(db_time::numeric, 6) AS db_time, last_time,
	           usesysid, usename, state, wait_event_type, wait_event, query,
	           first_time, application_name, client_addr, xact_start
	    FROM pgsentinel_blocking_minute
	), c AS (
	    SELECT bucket, kind, root_pid, pid, key_usesysid, depth, blocked_by,
	           samples, round(db_time::numeric, 6) AS db_time, last_time,
	           usesysid, usename, state, wait_event_type, wait_event, query,
	           first_time, application_name, client_addr, xact_start
	    FROM pgsentinel_blocking_parts((
	        SELECT jsonb_agg(jsonb_build_object(
	                   'ash_time', x.ash_time, 'sample_id', x.sample_id, 'pid', x.pid,
	                   'weight', x.weight, 'usesysid', x.usesysid, 'usename', x.usename,
	                   'application_name', x.application_name, 'client_addr', x.client_addr,
	                   'xact_start', x.xact_start, 'state', x.state, 'wait_event_type', x.wait_event_type,
	                   'wait_event', x.wait_event, 'query', x.top_level_query,
	                   'blocking', CASE WHEN cardinality(x.blocking_pids) > 0 THEN x.blocking_pids
	                                    WHEN x.blockerpid IS NOT NULL THEN ARRAY[x.blockerpid] END,
	                   'blockerpid', x.blockerpid, 'blocker_state', x.blocker_state,
	                   'blocker_usesysid', x.blocker_usesysid))
	        FROM pgsentinel_ash_archive x
	        WHERE x.blocked_sample
	          AND x.ash_time < (SELECT rolled_until FROM pgsentinel_archive_state)), 'minute')
	)
	SELECT (SELECT count(*) FROM r WHERE kind = 'r' AND root_pid IS NOT NULL) > 0,
	       (SELECT count(*) FROM ((TABLE r EXCEPT ALL TABLE c)
	                              UNION ALL (TABLE c EXCEPT ALL TABLE r)) d)}),
	"t|0", 'blocking rollup by minute: the parts of the archived rows');

pgs_stop_bg($_) for @bg;
pgs_stop_bg($root);

# A 5-s burst of two clients running $sql (whose text has /* $tag */), until
# it is over and no longer read; returns the window from 10 s before it to
# now.
sub burst
{
	my ($sql, $tag, $name) = @_;
	my $start = pgs_server_time($node);
	my $file = $node->basedir . "/$tag.sql";
	append_to_file($file, "$sql /* $tag */;\n");
	my $h = pgs_pgbench_bg($node, '-n', '-c', '2', '-j', '2', '-T', '5', '-f', $file, 'postgres');
	pgs_stop_bg($h, wait => 1);
	ok( $node->poll_query_until('postgres', qq{
			SELECT count(*) > 0 FROM pg_stat_statements_history h
			  JOIN pg_stat_statements s USING (queryid)
			 WHERE s.query LIKE '%/* $tag */%' AND h.ash_time > now() - interval '1 second'}, 'f'),
		$name);
	return split /\|/, $node->safe_psql('postgres',
		"SELECT timestamptz '$start' - interval '10 seconds' || '|' || now()");
}

# Top SQL's call figures are those of pg_stat_statements over the window:
# a burst of short calls in the middle of a longer window gives calls per
# second of the window (not of the burst), the milliseconds per call, and
# the share of the window the statement's readings span (with sweeps, from
# its zeros at the sweep before its first reading: how much of the window
# that is depends on when the sweep fell).
my ($w0, $w1) = burst('SELECT pg_sleep(0.02)', 'rep_calls', 'the burst is over and no longer read');
my $figures = qq{
	SELECT t.calls_per_s * extract(epoch FROM timestamptz '$w1' - timestamptz '$w0') / s.calls
	           BETWEEN 0.95 AND 1.0,
	       t.ms_per_call / s.mean_exec_time BETWEEN 0.95 AND 1.05,
	       t.counted > 0.1 AND t.counted <= 1.0, s.calls > 100
	  FROM pgsentinel_top_statements('$w0', '$w1', 1000) t
	  JOIN pg_stat_statements s ON s.queryid = t.queryid AND s.toplevel
	 WHERE s.query LIKE '%/* rep_calls */%'};
is($node->safe_psql('postgres', $figures), 't|t|t|t',
	'calls/s over the window and ms/call agree with pg_stat_statements within 5 %; the share counted is said');
# the text report says the calls are a lower bound only when they are:
# with sweeps (the default) every statement that ran was read
my $text_report = "SELECT pgsentinel_report('$w0', '$w1', 'text')";
unlike($node->safe_psql('postgres', $text_report), qr/read only while sampled/,
	'with sweeps, no statement\'s calls are said to be a lower bound');
$node->append_conf('postgresql.conf', "pgsentinel_pgssh.sweep_interval = 0\n");
$node->reload;
ok( $node->poll_query_until('postgres',
		"SELECT setting = '0' FROM pg_settings WHERE name = 'pgsentinel_pgssh.sweep_interval'"),
	'sweeps off');
# a burst without sweeps: the statement's first reading is a sample's,
# without zeros before it, and its calls are counted from there
my ($v0, $v1) = burst('SELECT pg_sleep(0.02), 1 AS off', 'rep_calls_off',
	'the burst without sweeps is over and no longer read');
like( $node->safe_psql('postgres',
		"SET pgsentinel_report.rollups = on; SELECT pgsentinel_report('$v0', '$v1', 'text')"),
	qr/rep_calls_off.*\n\s+\(calls counted over \d+% of the window: it was read only while sampled\)/,
	'without sweeps, a statement read over part of the window is said to be');
$node->append_conf('postgresql.conf', "pgsentinel_pgssh.sweep_interval = 30\n");
$node->reload;

# after pgsentinel_reset() (the ring emptied) the same figures come from
# the archive's statements history
ok( $node->poll_query_until('postgres',
		"SELECT statements_last_time >= '$w1' FROM pgsentinel_archive_state"),
	'the statements history of the window archived');
$node->safe_psql('postgres', 'SELECT pgsentinel_reset()');
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FROM pg_stat_statements_history h
	  JOIN pg_stat_statements s USING (queryid) WHERE s.query LIKE '%/* rep_calls */%'}),
	'0', 'the ring no longer has the burst');
is($node->safe_psql('postgres', $figures), 't|t|t|t',
	'after pgsentinel_reset(): the same figures, from the archive');

$node->stop;
done_testing();
