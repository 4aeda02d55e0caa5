
# Rows of a statement still being parsed (waiting for a lock before it has
# a query id) are remembered, up to 4096, to get the query id once it is
# known: from pg_stat_activity while the statement runs, or from the
# backend, which the sampler asks for it, when it has gone on to another.  Statements that end without one (lock_timeout here) must give
# their places back: before, they kept them for as long as their sessions
# stayed idle, and once the list was full no later lock waiter got its
# query id.

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
$node->safe_psql('postgres', 'CREATE TABLE bp_rows (id int PRIMARY KEY, v int)');

my $holder = pgs_start_bg($node, q{
	BEGIN;
	LOCK TABLE bp_rows;
	SELECT pg_sleep(600) /* bp-holder */;
});
ok(pgs_wait_sessions($node, 1, '%bp-holder%'), 'table locked');

# $n sessions wait for the lock while their UPDATE is parsed, then give up
# (lock_timeout) and stay connected, idle (psql waits for more input): at
# 10 ms, $n waiters fill the 4096 places in well under the timeout.
my @quitters = map {
	pgs_start_interactive($node,
		"SET lock_timeout = '1500ms';\nUPDATE bp_rows SET v = v + 1 /* bp-timeout */;\n")
} 1 .. $n;
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = $n FROM pg_stat_activity
		WHERE query LIKE '%bp-timeout%' AND state = 'idle'}),
	"$n statements timed out, their sessions idle");
cmp_ok( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_active_session_history
		WHERE query LIKE '%bp-timeout%' AND wait_event_type = 'Lock'}),
	'>', 4096, 'more lock-wait rows without a query id than places');

# One more waiter, which stays connected after its UPDATE; the lock is
# released while it waits.
my $waiter = pgs_start_interactive($node,
	"UPDATE bp_rows SET v = v + 1 /* bp-waiter */;\n");
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) >= 5 FROM pg_active_session_history
		WHERE query LIKE '%bp-waiter%' AND wait_event_type = 'Lock'}),
	'the last waiter sampled while it waits');
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%bp-holder%' AND pid <> pg_backend_pid()");
pgs_stop_bg($holder);

# Its lock-wait rows get the query id of its UPDATE.
ok( $node->poll_query_until('postgres', q{
		SELECT bool_and(queryid IS NOT NULL) FROM pg_active_session_history
		WHERE query LIKE '%bp-waiter%' AND wait_event_type = 'Lock'}),
	'the last waiter\'s lock-wait rows have their query id');
is( $node->safe_psql('postgres', q{
		SELECT count(DISTINCT a.queryid) = 1 AND bool_and(a.queryid = s.queryid)
		FROM pg_active_session_history a
		JOIN pg_stat_statements s ON s.query LIKE 'UPDATE bp_rows SET v = v + $1 /* bp-waiter */'
		WHERE a.query LIKE '%bp-waiter%' AND a.wait_event_type = 'Lock'}),
	't', 'the query id pg_stat_statements has for it');

pgs_stop_bg($_) for @quitters, $waiter;

# --- waiters that go on to their next statement at once ------------------
# When the sampler next looks, their UPDATEs have ended and pg_sleep has
# started: pg_stat_activity no longer has the UPDATEs' query ids.  The
# sampler asked each backend for it, and the backend answered when its
# UPDATE was executed.
$holder = pgs_start_bg($node, q{
	BEGIN;
	LOCK TABLE bp_rows;
	SELECT pg_sleep(600) /* bp-holder2 */;
});
ok(pgs_wait_sessions($node, 1, '%bp-holder2%'), 'table locked again');
my @movers = map {
	pgs_start_interactive($node,
		"UPDATE bp_rows SET v = v - 1 /* bp-mover */;\nSELECT pg_sleep(600) /* bp-next */;\n")
} 1 .. 3;
ok( $node->poll_query_until('postgres', q{
		SELECT count(DISTINCT pid) = 3 FROM pg_active_session_history
		WHERE query LIKE '%bp-mover%' AND wait_event_type = 'Lock'}),
	'the three waiters sampled while they wait');
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%bp-holder2%' AND pid <> pg_backend_pid()");
pgs_stop_bg($holder);
ok(pgs_wait_sessions($node, 3, '%bp-next%'), 'the waiters went on to their next statement');
ok( $node->poll_query_until('postgres', q{
		SELECT bool_and(queryid IS NOT NULL) FROM pg_active_session_history
		WHERE query LIKE '%bp-mover%' AND wait_event_type = 'Lock'}),
	'their lock-wait rows have their query id');
is( $node->safe_psql('postgres', q{
		SELECT count(DISTINCT a.queryid) = 1 AND bool_and(a.queryid = s.queryid)
			AND bool_and(a.cmdtype = 'UPDATE')
		FROM pg_active_session_history a
		JOIN pg_stat_statements s ON s.query = 'UPDATE bp_rows SET v = v - $1 /* bp-mover */'
		WHERE a.query LIKE '%bp-mover%' AND a.wait_event_type = 'Lock'}),
	't', 'the query id pg_stat_statements has for the UPDATE, and its command type');

pgs_stop_bg($_) for @movers;

# --- two statements in one query string, each waiting while parsed -------
# They share the string and its start; only the first waits for ms_a, only
# the second for ms_b.  No row may get the other statement's query id.
$node->safe_psql('postgres',
	'CREATE TABLE ms_a (v int); CREATE TABLE ms_b (v int)');
my $holder_a = pgs_start_bg($node,
	q{BEGIN; LOCK TABLE ms_a; SELECT pg_sleep(600) /* ms-holder-a */;});
my $holder_b = pgs_start_bg($node,
	q{BEGIN; LOCK TABLE ms_b; SELECT pg_sleep(600) /* ms-holder-b */;});
ok(pgs_wait_sessions($node, 1, '%ms-holder-a%'), 'ms_a locked');
ok(pgs_wait_sessions($node, 1, '%ms-holder-b%'), 'ms_b locked');
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
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%ms-holder-a%' AND pid <> pg_backend_pid()");
pgs_stop_bg($holder_a);
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
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%ms-holder-b%' AND pid <> pg_backend_pid()");
pgs_stop_bg($holder_b);
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
