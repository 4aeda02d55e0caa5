
# Reliability 9: the sampler does not leak.  Thousands of 10 ms samples of
# changing sessions (new connections, new texts, nested statements, lock
# waiters, idle-in-transaction sessions) do not grow the worker's private
# memory.
#
# The measure is RssAnon from /proc/<pid>/status (the worker's private,
# anonymous memory: where a palloc or malloc leak shows).  VmRSS also counts
# the pages of shared memory the worker has touched; with a small ring and
# text area those are all touched during the warm-up, so VmRSS is checked
# too, with the same bound.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $warmup = 10;
my $measure = 50;
my $bound_kb = 2048;

my $node = pgs_node('leaks',
	conf => "pgsentinel_ash.max_entries = 1000\npgsentinel_ash.text_area_size = 64\npgsentinel_ash.track_idle_trans = on\nmax_connections = 40\n");

$node->safe_psql('postgres', q{
CREATE TABLE leak_t (id int PRIMARY KEY, v int);
INSERT INTO leak_t VALUES (1, 0), (2, 0);
CREATE FUNCTION leak_f(r bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT pg_sleep(0.002), %s AS nested_r', r);
END $$;
});

my $dir = $node->basedir;
append_to_file("$dir/new_text.sql",
	"\\set r random(1, 1000000000)\nSELECT pg_sleep(0.003), :r AS r, repeat('x', :r % 500) AS pad;\n");
append_to_file("$dir/nested.sql",
	"\\set r random(1, 1000000000)\nSELECT leak_f(:r);\n");
append_to_file("$dir/locks.sql",
	"BEGIN;\nUPDATE leak_t SET v = v + 1 WHERE id = 1;\nSELECT pg_sleep(0.004);\nEND;\n");
append_to_file("$dir/idle_xact.sql",
	"BEGIN;\nSELECT 1;\n\\sleep 5 ms\nEND;\n");

my $pid = pgs_status($node, 'worker_pid');
ok($pid > 0, "worker pid $pid");

# Run the changing workload for $secs seconds, reconnecting for every
# transaction (-C) so pids and backend slots keep changing.
sub workload
{
	my ($secs) = @_;
	my $h = pgs_pgbench_bg($node, '-n', '-C', '-c', '6', '-j', '2', '-T', $secs,
		'-f', "$dir/new_text.sql\@4", '-f', "$dir/nested.sql\@2",
		'-f', "$dir/locks.sql\@2", '-f', "$dir/idle_xact.sql\@1", 'postgres');
	my $rc = pgs_stop_bg($h, wait => 1);
	is($rc, 0, "workload of $secs s ran without error") or diag $h->{err};
	return $h;
}

workload($warmup);
my $s0 = pgs_status($node, 'samples_taken');
my $m0 = pgs_rss_kb($pid);
note "after warm-up: RssAnon $m0->{RssAnon} kB, VmRSS $m0->{VmRSS} kB, RssShmem $m0->{RssShmem} kB";

# The measure needs samples, not seconds (a leak shows per sample): a slow
# machine samples less often, so the workload runs on, 10 s at a time,
# until the worker took 2000 samples (40/s for 50 s on a quiet machine);
# one that cannot in 5 more minutes is stalled.
my $h = workload($measure);
for (my $i = 0; $i < 30 && pgs_status($node, 'samples_taken') - $s0 < 2000; $i++)
{
	$h = workload(10);
}
my $s1 = pgs_status($node, 'samples_taken');
my $m1 = pgs_rss_kb($pid);
note "after the measure: RssAnon $m1->{RssAnon} kB, VmRSS $m1->{VmRSS} kB, RssShmem $m1->{RssShmem} kB";
my ($tx) = $h->{out} =~ /actually processed: (\d+)/;
note "transactions (each on a new connection): " . ($tx // '?');

is(pgs_status($node, 'worker_pid'), $pid, 'same worker throughout (no restart)');
cmp_ok($s1 - $s0, '>=', 2000, 'at least 2000 samples taken during the measure (' . ($s1 - $s0) . ')');
my $rows = $node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE query LIKE '%nested_r%') > 0,
	       count(*) FILTER (WHERE blockers > 0) > 0,
	       count(*) FILTER (WHERE state = 'idle in transaction') > 0
	FROM pg_active_session_history});
is($rows, 't|t|t', 'the history holds nested statements, lock waiters and idle-in-transaction rows');
cmp_ok(pgs_status($node, 'texts_stored'), '>', 1000, 'many distinct texts went through the text area');

cmp_ok($m1->{RssAnon} - $m0->{RssAnon}, '<', $bound_kb,
	"worker private memory (RssAnon) grew less than $bound_kb kB ("
	  . ($m1->{RssAnon} - $m0->{RssAnon}) . " kB over " . ($s1 - $s0) . " samples)");
cmp_ok($m1->{VmRSS} - $m0->{VmRSS}, '<', $bound_kb,
	"worker VmRSS grew less than $bound_kb kB (" . ($m1->{VmRSS} - $m0->{VmRSS}) . " kB)");

# the worker's own memory contexts, for the record
my $ctx = $node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
is($ctx, 't', 'memory contexts of the worker logged');
ok($node->wait_for_log(qr/Grand total: \d+ bytes in \d+ blocks/), 'worker memory context totals in the log');

unlike(slurp_file($node->logfile), qr/PANIC|terminated by signal|out of memory/,
	'no crash or out of memory');
$node->stop;
done_testing();
