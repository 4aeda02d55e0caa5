
# Lock waiters' query ids.  Rows of a statement still being parsed (waiting
# for a lock before it has a query id) are remembered, as long as they are
# in the ring, to get the query id once it is known: from pg_stat_activity
# while the statement runs, or from the backend, which the sampler asks for
# it, when it has gone on to another statement.
# - A long queue of statements that end without one (cancelled here)
#   does not keep a later waiter from getting its query id: such rows used
#   to keep their places for as long as their sessions stayed idle, and
#   once the 4096 places there were had been taken no later lock waiter got its
#   query id.
# - A long queue of statements waiting while parsed, then run, gets the
#   query id on every row (more than 4096).
# - Waiters that go on to their next statement before the next sample get
#   the query id of the statement that waited.
# - Two statements of one query string (same start, same text) never get
#   each other's query id.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $n = 60;
my $node = pgs_node('backfill', conf => "max_connections = 80\n");
$node->safe_psql('postgres',
	'CREATE TABLE bp_rows (id int PRIMARY KEY, v int);
	 CREATE TABLE ms_a (v int); CREATE TABLE ms_b (v int)');

# A session holding an ACCESS EXCLUSIVE lock on $table, tagged $tag.
sub lock_table
{
	my ($table, $tag) = @_;
	my $h = pgs_start_bg($node,
		"BEGIN; LOCK TABLE $table; SELECT pg_sleep(600) /* $tag */;");
	ok(pgs_wait_sessions($node, 1, "%$tag%"), "$table locked ($tag)");
	return $h;
}

# Cancel the holder's sleep: its transaction ends, the lock goes.
sub release
{
	my ($h, $tag) = @_;
	$node->safe_psql('postgres',
		"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%$tag%' AND pid <> pg_backend_pid()"
	);
	pgs_stop_bg($h);
}

# The lock-wait rows of the statements tagged $tag all get the query id
# (and command type) pg_stat_statements has for $pgss_text.
sub lock_rows_get_query_id
{
	my ($tag, $pgss_text, $what) = @_;
	ok( $node->poll_query_until('postgres', qq{
			SELECT bool_and(queryid IS NOT NULL AND cmdtype <> 'UNKNOWN')
			FROM pg_active_session_history
			WHERE query LIKE '%$tag%' AND wait_event_type = 'Lock'}),
		"$what: the lock-wait rows have a query id and command type");
	is( $node->safe_psql('postgres', qq{
			SELECT count(DISTINCT a.queryid) = 1 AND bool_and(a.queryid = s.queryid)
				AND bool_and(a.cmdtype = 'UPDATE')
			FROM pg_active_session_history a
			JOIN pg_stat_statements s ON s.query = '$pgss_text'
			WHERE a.query LIKE '%$tag%' AND a.wait_event_type = 'Lock'}),
		't', "$what: the query id pg_stat_statements has for it, UPDATE");
}

# --- statements that fail while parsed give their places back ------------
# $n sessions wait for the lock while their UPDATE is parsed until they
# have recorded more than the 4096 rows that used to be remembered at most
# (waited for: a slow sampler takes longer), then are cancelled and stay
# connected, idle (psql waits for more input).
my $holder = lock_table('bp_rows', 'bp-holder');
my @quitters = map {
	pgs_start_interactive($node,
		"UPDATE bp_rows SET v = v + 1 /* bp-timeout */;\n")
} 1 .. $n;
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = $n FROM pg_stat_activity
		WHERE query LIKE '%bp-timeout%' AND wait_event_type = 'Lock'}),
	"$n statements wait for the lock");
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) > 4096 FROM pg_active_session_history
		WHERE query LIKE '%bp-timeout%' AND wait_event_type = 'Lock'}),
	"$n waiters recorded more than 4096 rows");
$node->safe_psql('postgres',
	"SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE query LIKE '%bp-timeout%' AND pid <> pg_backend_pid()");
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = $n FROM pg_stat_activity
		WHERE query LIKE '%bp-timeout%' AND state = 'idle'}),
	"$n statements cancelled, their sessions idle");
cmp_ok( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_active_session_history
		WHERE query LIKE '%bp-timeout%' AND wait_event_type = 'Lock'}),
	'>', 4096, 'more lock-wait rows without a query id than 4096');

# One more waiter, which stays connected after its UPDATE; the lock is
# released while it waits.
my $waiter = pgs_start_interactive($node,
	"UPDATE bp_rows SET v = v + 1 /* bp-waiter */;\n");
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) >= 5 FROM pg_active_session_history
		WHERE query LIKE '%bp-waiter%' AND wait_event_type = 'Lock'}),
	'the last waiter sampled while it waits');
release($holder, 'bp-holder');
lock_rows_get_query_id('bp-waiter',
	'UPDATE bp_rows SET v = v + $1 /* bp-waiter */', 'the last waiter');

# --- a long queue: every row gets its query id ----------------------------
# The same $n sessions queue again, without a timeout, until they have
# more than 4096 rows, and run when the lock goes.
$holder = lock_table('bp_rows', 'bp-holder-queue');
for my $q (@quitters)
{
	$q->{in} .= "UPDATE bp_rows SET v = v * 1 /* bp-queue */;\n";
	$q->{run}->pump_nb while length $q->{in};
}
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) > 4096 FROM pg_active_session_history
		WHERE query LIKE '%bp-queue%' AND wait_event_type = 'Lock'}),
	"$n waiters queued, more than 4096 rows");
release($holder, 'bp-holder-queue');
lock_rows_get_query_id('bp-queue',
	'UPDATE bp_rows SET v = v * $1 /* bp-queue */', 'the long queue');
pgs_stop_bg($_) for @quitters, $waiter;

# --- waiters that go on to their next statement at once ------------------
# When the sampler next looks, their UPDATEs have ended and pg_sleep has
# started: pg_stat_activity no longer has the UPDATEs' query ids.  The
# sampler asked each backend for it, and the backend answered when its
# UPDATE was executed.
$holder = lock_table('bp_rows', 'bp-holder2');
my @movers = map {
	pgs_start_interactive($node,
		"UPDATE bp_rows SET v = v - 1 /* bp-mover */;\nSELECT pg_sleep(600) /* bp-next */;\n")
} 1 .. 3;
ok( $node->poll_query_until('postgres', q{
		SELECT count(DISTINCT pid) = 3 FROM pg_active_session_history
		WHERE query LIKE '%bp-mover%' AND wait_event_type = 'Lock'}),
	'the three waiters sampled while they wait');
release($holder, 'bp-holder2');
ok(pgs_wait_sessions($node, 3, '%bp-next%'),
	'the waiters went on to their next statement');
lock_rows_get_query_id('bp-mover',
	'UPDATE bp_rows SET v = v - $1 /* bp-mover */', 'the waiters gone on');
pgs_stop_bg($_) for @movers;

# --- two statements in one query string, each waiting while parsed -------
# They share the string and its start; only the first waits for ms_a, only
# the second for ms_b.  No row may get the other statement's query id.
my $holder_a = lock_table('ms_a', 'ms-holder-a');
my $holder_b = lock_table('ms_b', 'ms-holder-b');
my $two = pgs_start_bg($node,
	'UPDATE ms_a SET v = 1; UPDATE ms_b SET v = 2 /* ms-two */');

# lock-wait rows of the string that match a condition
sub ms_lock_rows
{
	my ($cond) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM pg_active_session_history
		WHERE query LIKE '%ms-two%' AND wait_event_type = 'Lock' AND $cond});
}
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) >= 3 FROM pg_active_session_history
		WHERE query LIKE '%ms-two%' AND wait_event_type = 'Lock'}),
	'the first statement sampled waiting');
my $last_on_a = $node->safe_psql('postgres',
	'SELECT max(sample_id) FROM pg_active_session_history');
release($holder_a, 'ms-holder-a');
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pg_locks
		WHERE relation = 'ms_b'::regclass AND NOT granted}),
	'the second statement waits for ms_b');
my $first_on_b = $node->safe_psql('postgres',
	'SELECT max(sample_id) + 1 FROM pg_active_session_history');
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) >= 3 FROM pg_active_session_history
		WHERE query LIKE '%ms-two%' AND wait_event_type = 'Lock'
		AND sample_id >= $first_on_b}),
	'the second statement sampled waiting');
release($holder_b, 'ms-holder-b');
is(pgs_stop_bg($two, wait => 1), 0, 'both statements ran');
pgs_wait_samples($node, 5);
my ($id_a, $id_b) = split /\n/, $node->safe_psql('postgres', q{
	SELECT queryid FROM pg_stat_statements WHERE query LIKE 'UPDATE ms_a SET v = $1%'
	UNION ALL
	SELECT queryid FROM pg_stat_statements WHERE query LIKE 'UPDATE ms_b SET v = $1%'});
ok(defined $id_b && $id_a ne $id_b, 'two statements in pg_stat_statements');
is(ms_lock_rows("sample_id <= $last_on_a AND queryid = $id_b"), '0',
	'no row waiting for ms_a has the query id of the statement after it');
is(ms_lock_rows("sample_id >= $first_on_b AND queryid = $id_a"), '0',
	'no row waiting for ms_b has the query id of the statement before it');

$node->stop;
done_testing();
