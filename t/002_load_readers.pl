
# Reliability 1: sampling at 10 ms under a TPC-B load while ten sessions read
# the history in a loop.  No client error, no torn row or sample, sampling
# keeps its pace.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $duration = 20;

my $node = pgs_node('load', conf => "pgsentinel_ash.max_entries = 36000\n");

$node->command_ok(
	[ 'pgbench', '-i', '-s', '5', '-q', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pgbench -i -s 5');

# Each reader checks, inside the read, that every sample has one ash_time,
# no duplicate pid, and that ash_time grows with sample_id; a violation is a
# division by zero, which pgbench reports as a failed client.
my $reader_sql = <<'EOF';
SELECT 1 / (count(*) FILTER (WHERE nt <> 1 OR np <> n OR NOT ordered) = 0)::int, sum(n)
FROM (SELECT sample_id, count(DISTINCT ash_time) AS nt, count(DISTINCT pid) AS np, count(*) AS n,
             bool_and(prev_time IS NULL OR prev_time < ash_time) AS ordered
      FROM (SELECT sample_id, ash_time, pid,
                   CASE WHEN lag(sample_id) OVER (ORDER BY sample_id, pid) = sample_id THEN NULL
                        ELSE lag(ash_time) OVER (ORDER BY sample_id, pid) END AS prev_time
            FROM pg_active_session_history) r
      GROUP BY sample_id) s;
EOF
$reader_sql =~ s/\n/ /g;
my $reader_file = $node->basedir . '/reader.sql';
PostgreSQL::Test::Utils::append_to_file($reader_file, "$reader_sql\n");

# the check itself must pass on the idle node
is($node->psql('postgres', $reader_sql), 0, 'reader query runs');

my $t0 = pgs_server_time($node);
my $s0 = pgs_status($node, 'samples_taken');
my $o0 = pgs_status($node, 'sample_overruns');

my $tpcb = pgs_pgbench_bg($node, '-c', '4', '-j', '2', '-T', $duration,
	'-n', 'postgres');
my $readers = pgs_pgbench_bg($node, '-c', '10', '-j', '2', '-T', $duration,
	'-n', '-f', $reader_file, 'postgres');

my $rc_tpcb = pgs_stop_bg($tpcb, wait => 1);
my $rc_readers = pgs_stop_bg($readers, wait => 1);
my $t1 = pgs_server_time($node);
my $s1 = pgs_status($node, 'samples_taken');
my $o1 = pgs_status($node, 'sample_overruns');

is($rc_tpcb, 0, 'TPC-B pgbench exited 0');
unlike($tpcb->{err}, qr/error|abort/i, 'TPC-B pgbench: no client error')
  or diag $tpcb->{err};
is($rc_readers, 0, 'reader pgbench exited 0');
unlike($readers->{err}, qr/error|abort/i,
	'readers: no error, every read consistent')
  or diag $readers->{err};
like($readers->{out}, qr/number of transactions actually processed: (\d+)/,
	'readers ran');
my ($reads) = $readers->{out} =~ /actually processed: (\d+)/;
my ($tps) = $tpcb->{out} =~ /actually processed: (\d+)/;
# The bounds that hold whatever the machine's load are those a real bug
# crosses: readers that block (no read in 20 s), a sampler that stops
# (fewer than 2 samples/s, no recent sample for the diagnosis), a reader
# that blocks the sampler for a second (a gap or lock wait of 0.9 s).  The
# figures of a quiet machine are pgs_perf_check's: noted, checked with
# PGS_PERF_CHECKS=1.
cmp_ok($reads // 0, '>=', 10, "readers did full reads (" . ($reads // 0) . ")");
pgs_perf_check($reads // 0, '>=', 100, 'full reads by 10 readers in 20 s');
note "TPC-B transactions: " . ($tps // '?') . ", full reads: " . ($reads // '?');

# --- the history after the run ----------------------------------------------

is( $node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT sample_id FROM pg_active_session_history GROUP BY sample_id HAVING count(DISTINCT ash_time) > 1) s"),
	'0',
	'no torn sample (one ash_time per sample_id)');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT pid FROM pg_active_session_history WHERE backend_type = 'client backend' GROUP BY pid HAVING count(DISTINCT backend_start) > 1) s"),
	'0',
	'backend_start constant per pid');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT sample_id, pid FROM pg_active_session_history GROUP BY 1, 2 HAVING count(*) > 1) s"),
	'0',
	'no duplicate (sample_id, pid)');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE pid IS NULL OR ash_time IS NULL OR sample_id IS NULL OR state IS NULL OR backend_type IS NULL OR wait_event_type IS NULL"),
	'0',
	'no row with missing key fields');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE pid IN (SELECT pid FROM pg_active_session_history WHERE top_level_query LIKE '%pgbench_accounts%') AND top_level_query IS NULL"),
	'0',
	'every pgbench row has its text');
my $pgbench_rows = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_active_session_history WHERE top_level_query ~ 'pgbench_(accounts|tellers|branches|history)' AND ash_time BETWEEN '$t0' AND '$t1'");
cmp_ok($pgbench_rows, '>', 100, "pgbench sessions sampled ($pgbench_rows rows)");

my $elapsed = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM '$t1'::timestamptz - '$t0'::timestamptz)");
my $rate = ($s1 - $s0) / $elapsed;
note sprintf("samples: %d in %.1f s (%.1f/s), overruns: %d", $s1 - $s0, $elapsed, $rate, $o1 - $o0);
cmp_ok($rate, '>=', 2, "sampling went on under the load (" . sprintf('%.1f', $rate) . " samples/s)");
pgs_perf_check(sprintf('%.1f', $rate), '>=', 50, 'samples/s at a 10 ms period under the load');
pgs_perf_check($o1 - $o0, '<=', int(($s1 - $s0) / 10), 'sample overruns (at most 10% of samples)');

# largest gap between two consecutive samples that both have rows
my $maxgap = $node->safe_psql('postgres', qq{
	SELECT coalesce(extract(epoch FROM max(ash_time - prev)), 0) FROM (
	  SELECT sample_id, ash_time, lag(sample_id) OVER w AS prev_id, lag(ash_time) OVER w AS prev
	  FROM (SELECT DISTINCT sample_id, ash_time FROM pg_active_session_history
	        WHERE ash_time BETWEEN '$t0' AND '$t1') d
	  WINDOW w AS (ORDER BY sample_id)) x
	WHERE prev_id = sample_id - 1});
cmp_ok($maxgap, '<', 0.9, "no reader blocked the sampler: largest gap between consecutive samples $maxgap s");
pgs_perf_check($maxgap, '<', 0.5, 'largest gap between consecutive samples (s)');

my $lockwait = pgs_status($node, 'max_lock_wait_us');
my $maxsample = pgs_status($node, 'max_sample_us');
note "max_lock_wait_us = $lockwait, max_sample_us = $maxsample, ash_row_bytes = " . pgs_status($node, "ash_row_bytes");
cmp_ok($lockwait, '<', 900_000,
	"sampler never waited 0.9 s for readers to release the lock ($lockwait us)");
pgs_perf_check($lockwait, '<', 200_000, 'sampler lock wait (us)');
like(pgs_status($node, 'diagnosis'), qr/^ok/, 'diagnosis ok');
unlike(slurp_file($node->logfile), qr/PANIC|terminated by signal|TRAP/,
	'no crash in the server log');

$node->stop;
done_testing();
