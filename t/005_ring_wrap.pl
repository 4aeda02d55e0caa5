
# Reliability 5: the ring wraps around.  With 1000 entries and five sleeping
# sessions sampled every 10 ms, after more than 3000 rows were written the
# view holds exactly the newest 1000, oldest first, no duplicate, and every
# sample but possibly the oldest (partly overwritten) one is complete.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('wrap', conf => "pgsentinel_ash.max_entries = 1000\n");

is(pgs_status($node, 'ash_capacity'), '1000', 'capacity 1000');

my @bg = map { pgs_start_bg($node, "SELECT pg_sleep(600) /* ringsleep $_ */") } 1 .. 5;
ok(pgs_wait_sessions($node, 5, '%ringsleep%'), 'five sessions sleeping');
ok( $node->poll_query_until('postgres',
		"SELECT ash_rows_written > 3000 FROM pgsentinel_status()"),
	'more than 3000 rows written');

my $st = $node->safe_psql('postgres',
	"SELECT ash_rows, ash_capacity, ash_rows_written > 3000 FROM pgsentinel_status()");
is($st, '1000|1000|t', 'status: ash_rows = capacity = 1000, > 3000 written');
like(pgs_status($node, 'diagnosis'), qr/^ok; the ring has wrapped/,
	'diagnosis says the ring has wrapped');

# all checks on one copy of the ring
my $taken_before = pgs_status($node, 'samples_taken');
my $res = $node->safe_psql('postgres', q{
WITH h AS MATERIALIZED (
  SELECT sample_id, pid, ash_time, query, ord
  FROM pg_active_session_history() WITH ORDINALITY AS a(ash_time, datid, datname, pid, leader_pid, usesysid, usename,
       application_name, client_addr, client_hostname, client_port, backend_start, xact_start, query_start,
       state_change, wait_event_type, wait_event, state, backend_xid, backend_xmin, top_level_query, query,
       cmdtype, queryid, nested_queryid, backend_type, blockers, blockerpid, blocker_state, sample_id,
       blocking_pids, ord)),
s AS (SELECT sample_id, count(*) FILTER (WHERE query LIKE 'SELECT pg_sleep(600) /* ringsleep%') AS nsleep,
             count(DISTINCT ash_time) AS ntime
      FROM h GROUP BY sample_id)
SELECT
  (SELECT count(*) FROM h),
  (SELECT count(*) FROM (SELECT 1 FROM h GROUP BY pid, sample_id HAVING count(*) > 1) d),
  (SELECT bool_and(ok) FROM (SELECT sample_id >= lag(sample_id, 1, sample_id) OVER (ORDER BY ord)
                                    AND ash_time >= lag(ash_time, 1, ash_time) OVER (ORDER BY ord) AS ok FROM h) o),
  (SELECT max(sample_id) - min(sample_id) + 1 = count(*) FROM s),
  (SELECT count(*) FROM s WHERE nsleep <> 5 AND sample_id > (SELECT min(sample_id) FROM s)),
  (SELECT nsleep <= 5 FROM s ORDER BY sample_id LIMIT 1),
  (SELECT count(*) FROM s WHERE ntime <> 1)
});
my $taken_during = pgs_status($node, 'samples_taken') - $taken_before;
my ($rows, $dups, $ordered, $contig, $incomplete, $oldest_ok, $torn) =
  split /\|/, $res;
# The copy is taken in 128 kB chunks, the lock released in between: a sample
# written meanwhile overwrites the oldest rows, and the copy then keeps only
# the newest contiguous part (src/store/ring.c, cursor_fetch).  A sample is 5 rows
# (7 with the readers): the copy loses at most the samples written while it
# ran, however slow the machine.
cmp_ok($rows, '>=', 1000 - 7 * ($taken_during + 1),
	"the view returns the newest rows ($rows; $taken_during samples taken meanwhile)");
cmp_ok($rows, '<=', 1000, 'never more than the capacity');
is($dups, '0', 'no duplicate (pid, sample_id)');
is($ordered, 't', 'rows come oldest first: sample_id and ash_time never go back');
is($contig, 't', 'the sample_ids that remain are contiguous');
is($incomplete, '0', 'every sample but the oldest has all five sessions')
  or diag $node->safe_psql("postgres", "SELECT sample_id, ash_time, string_agg(pid::text || ':' || state || ':' || left(query, 40), ', ' ORDER BY pid) FROM pg_active_session_history GROUP BY 1, 2 HAVING count(*) FILTER (WHERE query LIKE 'SELECT pg_sleep(600) /* ringsleep%') <> 5 ORDER BY 1");
is($oldest_ok, 't', 'the oldest (possibly partly overwritten) sample has at most five of them');
is($torn, '0', 'one ash_time per sample');

# the ring keeps only the newest rows: the oldest row is recent
is( $node->safe_psql('postgres',
		"SELECT (SELECT min(ash_time) FROM pg_active_session_history) >= oldest_row_time FROM pgsentinel_status()"),
	't', 'oldest_row_time is not after the oldest row read later');
ok( $node->poll_query_until('postgres',
		"SELECT min(ash_time) > now() - interval '10 s' FROM pg_active_session_history"),
	'oldest row is recent (old rows were overwritten)');

# the ring keeps wrapping correctly
my $w = pgs_status($node, 'ash_rows_written');
ok( $node->poll_query_until('postgres',
		"SELECT ash_rows_written > $w + 2500 FROM pgsentinel_status()"),
	'another 2500 rows written');
is( $node->safe_psql('postgres',
		"SELECT count(*) BETWEEN 990 AND 1000 AND count(DISTINCT (pid, sample_id)) = count(*) FROM pg_active_session_history"),
	't', 'still the newest 1000 rows (less what a sample overwrote during the read), all distinct');

pgs_stop_bg($_) foreach @bg;
$node->stop;
done_testing();
