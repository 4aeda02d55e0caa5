
# Rows of a statement still being parsed (waiting for a lock before it has
# a query id) are remembered, up to 4096, to get the query id once it is
# known.  Statements that end without one (lock_timeout here) must give
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
$node->stop;
done_testing();
