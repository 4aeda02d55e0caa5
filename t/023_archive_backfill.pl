
# Lock waiters' query ids reach the archive.  A statement waiting for a lock
# while it is parsed has no query id yet; the sampler completes its rows in
# the ring once the id is known (t/017).  The archiver leaves such samples,
# and those after them, in the ring until then (for at most a minute), so
# the archived rows carry the query id too instead of NULL.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('archive_backfill',
	conf => "pgsentinel_archive.interval = 100ms\n"
	  . "pgsentinel_archive.keep_one_in = 1\n");
$node->safe_psql('postgres', 'CREATE TABLE bf_t (v int)');
ok($node->poll_query_until('postgres', "SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'archiver running');

my $holder = pgs_start_bg($node,
	'BEGIN; LOCK TABLE bf_t; SELECT pg_sleep(600) /* bf-holder */;');
ok(pgs_wait_sessions($node, 1, '%bf-holder%'), 'bf_t locked');

# Parsing takes the table's lock: the statement waits without a query id,
# and once granted it sleeps, its query id published.
my $waiter = pgs_start_bg($node, 'SELECT count(*), pg_sleep(600) FROM bf_t /* bf-waiter */');
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) >= 5 FROM pg_active_session_history
		WHERE query LIKE '%bf-waiter%' AND wait_event_type = 'Lock' AND queryid IS NULL}),
	'the waiter is sampled without a query id');
# The archiver goes on meanwhile with what came before.  (The waiter's rows
# are told by its pid: the polls' own texts name bf-waiter too, and one of
# them may be sampled before the waiter's statement began.)
my $waiter_pid = $node->safe_psql('postgres', q{
	SELECT min(pid) FROM pg_active_session_history
	WHERE query LIKE '%bf-waiter%' AND wait_event_type = 'Lock'});
my $first = $node->safe_psql('postgres',
	"SELECT min(sample_id) FROM pg_active_session_history WHERE pid = $waiter_pid");
ok( $node->poll_query_until('postgres',
		"SELECT last_sample_id = $first - 1 FROM pgsentinel_archive_state"),
	'the samples before the waiter are archived');

$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%bf-holder%' AND pid <> pg_backend_pid()"
);
pgs_stop_bg($holder);
ok( $node->poll_query_until('postgres', q{
		SELECT bool_and(queryid IS NOT NULL) FROM pg_active_session_history
		WHERE query LIKE '%bf-waiter%' AND wait_event_type = 'Lock'}),
	'the ring completes the waiting rows with the query id');

my $newest = $node->safe_psql('postgres', 'SELECT max(sample_id) FROM pgsentinel_samples()');
ok( $node->poll_query_until('postgres',
		"SELECT last_sample_id >= $newest FROM pgsentinel_archive_state"),
	'the archive catches up');
is( $node->safe_psql('postgres', qq{
		SELECT count(*) > 0 AND count(*) = count(a.queryid)
		       AND bool_and(a.queryid = r.queryid)
		       AND count(*) = (SELECT count(*) FROM pg_active_session_history
		                        WHERE query LIKE '%bf-waiter%' AND wait_event_type = 'Lock'
		                          AND sample_id <= $newest)
		FROM pgsentinel_ash_archive a
		JOIN pg_active_session_history r USING (sample_id, pid)
		WHERE a.query LIKE '%bf-waiter%' AND a.wait_event_type = 'Lock'}),
	't', 'every archived lock-wait row has the query id the ring has');

$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%bf-waiter%' AND pid <> pg_backend_pid()"
);
pgs_stop_bg($waiter);
$node->stop;
done_testing();
