
# Incidents on a noisy baseline, staged as a DBA meets them: short
# statements of one to three sessions at a time all along (a median of no
# session active), then a lock queue behind DDL (a transaction left idle
# holding AccessShareLock, an ALTER TABLE asking AccessExclusiveLock, five
# readers queued behind it), then six sessions scanning a table.  Over the
# whole stretch pgsentinel_incidents() finds the two episodes and nothing
# else; each begins at the first sample that saw it (no earlier than two
# sampling periods before it was staged) and ends with the last sample
# that saw it (no later than two periods after it was over); the queue's
# top wait is the relation lock and its root blocker the idle session,
# and a finding of the report says to end that transaction.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $p = 0.2;    # the sampling period, seconds
my $node = pgs_node('incidents',
	conf => "pgsentinel_ash.sampling_period = $p\n"
	  . "shared_buffers = 2MB\n"
	  . "max_parallel_workers_per_gather = 0\n");
$node->safe_psql('postgres', q{
	CREATE TABLE inc_t (id int PRIMARY KEY, v int);
	INSERT INTO inc_t SELECT g, 0 FROM generate_series(1, 100) g;
	CREATE TABLE scan_t AS SELECT g, repeat('x', 100) AS filler
	                         FROM generate_series(1, 50000) g;
});

# The baseline: three clients, each a 0.15-s statement every 1.15-2.15 s
# (shorter than a sampling period: alone or together, never three samples
# in a row).
my $noise_script = $node->basedir . '/noise.sql';
append_to_file($noise_script,
	"\\set d random(1000, 2000)\n\\sleep :d ms\nSELECT pg_sleep(0.15) /* noise */;\n");
my $noise = pgs_pgbench_bg($node, '-n', '-c', '3', '-j', '1', '-T', '900',
	'-f', $noise_script, 'postgres');
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE query LIKE '%/* ' || 'noise */%'"),
	'the baseline is sampled');
my $t0 = pgs_server_time($node);
ok(pgs_wait_until_time($node, $t0, 25), 'a quiet baseline first');

# Six sessions connected beforehand, so that an episode's statements start
# within milliseconds of each other.
sub connect_six
{
	my ($tag) = @_;
	my @s = map { pgs_start_interactive($node, "SET application_name = '$tag';\n") } 1 .. 6;
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 6 FROM pg_stat_activity
			  WHERE application_name = '$tag' AND state = 'idle'"),
		"six sessions connected ($tag)");
	return @s;
}

sub send_sql
{
	my ($h, $sql) = @_;
	$h->{in} .= "$sql\n";
	$h->{run}->pump_nb while length $h->{in};
}

# When the second of an episode's statements started (from then on the
# episode has two sessions and more), by the tag in its text.  (The DDL is
# sent first and the readers once it waits, so that they queue behind it.)
sub second_start
{
	my ($tag) = @_;
	return $node->safe_psql('postgres',
		"SELECT (array_agg(query_start ORDER BY query_start))[2] FROM pg_stat_activity
		  WHERE query LIKE '%/* ' || '$tag */%' AND pid <> pg_backend_pid()");
}

# Wait until the episode tagged $tag has $n sessions active; returns the
# result of the wait.
sub wait_active
{
	my ($tag, $n) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = $n FROM pg_stat_activity
		  WHERE query LIKE '%/* ' || '$tag */%' AND state = 'active' AND pid <> pg_backend_pid()");
}

# Episode A: the lock queue.
my $holder = pgs_start_interactive($node,
	"BEGIN;\nSELECT count(*) FROM inc_t;\n");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE 'SELECT count(*) FROM inc_t%'"),
	'the holder is idle in its transaction');
my $holder_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE 'SELECT count(*) FROM inc_t%'");
my @a = connect_six('stage_a');
my $a_staged = pgs_server_time($node);
send_sql($a[0], 'ALTER TABLE inc_t ADD COLUMN w int /* epA */;');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE query LIKE 'ALTER TABLE inc_t%' AND wait_event_type = 'Lock'"),
	'the DDL waits for the holder');
send_sql($_, 'SELECT count(*) FROM inc_t /* epA */;') for @a[ 1 .. 5 ];
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 6 FROM pg_stat_activity
		  WHERE query LIKE '%/* ' || 'epA */%' AND wait_event_type = 'Lock'"),
	'the DDL and five readers queue behind the holder');
my $a_second = second_start('epA');
ok(pgs_wait_until_time($node, $a_second, 5), 'the queue held five seconds');
my $a_ending = pgs_server_time($node);
send_sql($holder, 'COMMIT;');
ok(wait_active('epA', 0), 'the queue drained');
my $a_over = pgs_server_time($node);
pgs_stop_bg($_) for @a;
ok(pgs_wait_until_time($node, $a_over, 20), 'the baseline again');

# Episode B: six sessions scanning a table until a deadline.
my @b = connect_six('stage_b');
my $b_staged = pgs_server_time($node);
my $deadline = $node->safe_psql('postgres',
	"SELECT '$b_staged'::timestamptz + interval '5 seconds'");
send_sql($_,
	"DO \$\$BEGIN WHILE clock_timestamp() < '$deadline' LOOP PERFORM count(*) FROM scan_t; END LOOP; END\$\$ /* epB */;"
) for @b;
ok(wait_active('epB', 6), 'six sessions scan');
my $b_second = second_start('epB');
ok(wait_active('epB', 0), 'the scans ended');
my $b_over = pgs_server_time($node);
pgs_stop_bg($_) for @b;
ok(pgs_wait_until_time($node, $b_over, 20), 'the baseline to the end');
my $t1 = pgs_server_time($node);
ok(pgs_wait_samples($node, 3), 'sampled past the window');
pgs_stop_bg($noise);

my $w = "'$t0'::timestamptz, '$t1'::timestamptz";
my $all = $node->safe_psql('postgres',
	"SELECT incident, started, ended, baseline, threshold, round(aas::numeric, 2), top_wait, root_blocker
	   FROM pgsentinel_incidents($w) ORDER BY incident");
note("incidents:\n$all");
is($node->safe_psql('postgres', "SELECT count(*) FROM pgsentinel_incidents($w)"),
	'2', 'two incidents: the staged episodes and nothing else');
is($node->safe_psql('postgres', "SELECT baseline FROM pgsentinel_incidents($w) LIMIT 1"),
	'0', 'the baseline is the median: no session active');

# An episode's edges: it begins no earlier than two periods before it was
# staged and no later than the first sample after its second session
# started; it ends no earlier than the last sample before it was ended
# and no later than two periods after it was seen over.
sub check_edges
{
	my ($n, $tag, $staged, $second, $ending, $over) = @_;
	my $edges = $node->safe_psql('postgres', qq{
		WITH i AS (SELECT * FROM pgsentinel_incidents($w) WHERE incident = $n),
		     s AS (SELECT sample_time FROM pgsentinel_samples_in($w))
		SELECT i.started >= '$staged'::timestamptz - interval '$p s' * 2,
		       i.started <= (SELECT min(sample_time) FROM s WHERE sample_time >= '$second'),
		       i.ended >= (SELECT max(sample_time) FROM s WHERE sample_time <= '$ending'),
		       i.ended <= '$over'::timestamptz + interval '$p s' * 2,
		       round(extract(epoch FROM i.started - '$second'::timestamptz)::numeric, 2),
		       round(extract(epoch FROM i.ended - '$ending'::timestamptz)::numeric, 2)
		  FROM i});
	my ($s_lo, $s_hi, $e_lo, $e_hi, $ds, $de) = split /\|/, $edges;
	note("$tag: started $ds s after its second session, ended $de s after it was ended");
	is("$s_lo$s_hi", 'tt', "$tag begins at the first sample that saw it");
	is("$e_lo$e_hi", 'tt', "$tag ends with the last sample that saw it");
}
check_edges(1, 'the lock queue', $a_staged, $a_second, $a_ending, $a_over);
check_edges(2, 'the scans', $b_staged, $b_second, $deadline, $b_over);

is( $node->safe_psql('postgres',
		"SELECT top_wait || ' ' || root_blocker FROM pgsentinel_incidents($w) WHERE incident = 1"),
	"Lock:relation $holder_pid",
	'the queue: its top wait is the relation lock, its root the idle holder');
is( $node->safe_psql('postgres',
		"SELECT top_wait NOT LIKE 'Lock:%' AND root_blocker IS NULL FROM pgsentinel_incidents($w) WHERE incident = 2"),
	't', 'the scans: no lock, no blocker');

# The report's findings name the holder, what it cost and what to do.
my $findings = $node->safe_psql('postgres',
	"SELECT string_agg(f->>'finding', E'\\n')
	   FROM jsonb_array_elements(pgsentinel_report($w, 'json')::jsonb->'findings') f");
note("findings:\n$findings");
like($findings, qr/Session $holder_pid .*idle in transaction.*AccessShareLock.*end that transaction/,
	'a finding names the holder, the lock it held, and says to end its transaction');
like($findings, qr/\(SELECT pg_sleep\(0\.15\).*Timeout:PgSleep \d+%.*: look at the application that calls it/,
	"the baseline's sleeping statement is sent to its application, not to its plan");
unlike($findings, qr/parallel workers, replication/,
	'the scans waiting on each other\'s reads are not sent to parallel workers');

pgs_stop_bg($holder);
done_testing();
