
# Reliability 3 and 4: readers of a full 100000-row ring cancelled (statement
# timeout, pg_cancel_backend) or terminated mid-read leave nothing behind;
# SIGKILL of an ordinary backend makes the postmaster reinitialize and
# sampling resumes.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgsTest;

my $cap = 100000;
my $nsleep = 100;

my $node = pgs_node('cancel',
	conf => "max_connections = 150\npgsentinel_ash.max_entries = $cap\n");

my $sleepers = pgs_start_sleepers($node, $nsleep, 600, 'sleepers');
ok( $node->poll_query_until('postgres',
		"SELECT ash_rows = $cap AND ash_rows_written > $cap FROM pgsentinel_status()"),
	"ring of $cap rows full");

# A correct read: (nearly) every row of the full ring -- a reader copies in
# chunks and, if the sampler overwrote rows it had not copied yet, keeps the
# newest contiguous part -- with one ash_time per sample and contiguous
# sample ids.  A reader starts at the oldest row, just ahead of the
# sampler: preempted there long enough (a few samples of 100 rows), it is
# lapped, skips the rows overwritten under it and says so in a NOTICE; the
# samples it read are then not contiguous, and that is correct.
my $check_read = sub {
	my ($what) = @_;
	my ($ret, $r, $err) = $node->psql('postgres', qq{
		SET client_min_messages = notice;
		SELECT count(*) BETWEEN $cap / 2 AND $cap,
		       count(DISTINCT ash_time) = count(DISTINCT sample_id),
		       max(sample_id) - min(sample_id) + 1 = count(DISTINCT sample_id),
		       count(*)
		FROM pg_active_session_history});
	is($ret, 0, "$what: next reader reads the ring") or diag $err;
	my $lapped = $err =~ /rows of the active session history were overwritten before this query read them/;
	note "$what: the read was lapped by the sampler: $err" if $lapped;
	like($r, $lapped ? qr/^t\|t\|[tf]\|/ : qr/^t\|t\|t\|/,
		"$what: next reader gets the ring ($r): one ash_time per sample, contiguous samples unless lapped");
	ok(pgs_wait_samples($node, 5), "$what: sampling continues");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE wait_event_type = 'LWLock' AND wait_event = 'pgsentinel'"),
		"$what: nobody left waiting on the pgsentinel lock");
};

# --- statement_timeout at many points of the read ---------------------------

my $t_reads = pgs_server_time($node);

my ($cancelled, $completed) = (0, 0);
foreach my $ms (1, 2, 3, 5, 8, 13, 20, 30, 50, 80, 130, 200)
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET statement_timeout = '${ms}ms'; SELECT count(*), sum(length(top_level_query)) FROM pg_active_session_history");
	if ($ret == 0) { $completed++; }
	elsif ($err =~ /canceling statement due to statement timeout/) { $cancelled++; }
	else { fail("unexpected error at statement_timeout $ms ms: $err"); }
}
note "statement_timeout reads: $cancelled cancelled, $completed completed";
cmp_ok($cancelled, '>=', 1, "some reads were cancelled by statement_timeout ($cancelled)");
$check_read->('after statement_timeout cancels');

# --- pg_cancel_backend and pg_terminate_backend of a reading loop ------------

my $loop = q{DO $$BEGIN FOR i IN 1..1000000 LOOP PERFORM count(*), sum(length(query)) FROM pg_active_session_history; END LOOP; END$$ /* readloop */};
foreach my $kind (qw(cancel cancel cancel terminate terminate))
{
	my $bg = pgs_start_bg($node, $loop);
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%readloop%' AND state = 'active' AND pid <> pg_backend_pid()"),
		"$kind: reading loop running");
	# land the signal at a varying point of a read
	usleep(int(rand(300_000)));
	is( $node->safe_psql('postgres',
			"SELECT bool_and(pg_${kind}_backend(pid)) FROM pg_stat_activity WHERE query LIKE '%readloop%' AND pid <> pg_backend_pid()"),
		't', "pg_${kind}_backend of the reader");
	my $rc = pgs_stop_bg($bg, wait => 1);
	isnt($rc, 0, "$kind: reader ended with an error");
	like($bg->{err},
		$kind eq 'cancel'
		? qr/canceling statement due to user request/
		: qr/terminating connection due to administrator command|server closed the connection/,
		"$kind: reader got the expected error");
	$check_read->("after $kind");
}
my $lockwait = pgs_status($node, 'max_lock_wait_us');
note "max_lock_wait_us after the cancelled reads: $lockwait";
# hard bounds: what a reader blocking the sampler for a second crosses;
# the figures of a quiet machine are checked with PGS_PERF_CHECKS=1
cmp_ok($lockwait, '<', 900_000, "sampler never waited 0.9 s for the lock ($lockwait us)");
pgs_perf_check($lockwait, '<', 500_000, 'sampler lock wait after the cancelled reads (us)');
# every sample has the 100 sleepers, so consecutive sample_ids are all there
my $maxgap = $node->safe_psql('postgres', qq{
	SELECT extract(epoch FROM max(ash_time - prev)) FROM (
	  SELECT sample_id, ash_time, lag(sample_id) OVER w AS prev_id, lag(ash_time) OVER w AS prev
	  FROM (SELECT DISTINCT sample_id, ash_time FROM pg_active_session_history
	        WHERE ash_time >= '$t_reads') d
	  WINDOW w AS (ORDER BY sample_id)) x
	WHERE prev_id = sample_id - 1});
note "largest gap between consecutive samples during the reads: $maxgap s";
cmp_ok($maxgap, '<', 0.9, "readers never blocked the sampler ($maxgap s)");
pgs_perf_check($maxgap, '<', 0.25, 'largest gap between consecutive samples during the reads (s)');
unlike(slurp_file($node->logfile), qr/PANIC|terminated by signal|TRAP|lock .* is not held/,
	'no crash or lock error in the log so far');

# --- SIGKILL of an ordinary backend -------------------------------------------

my $victim = $node->safe_psql('postgres',
	"SELECT min(pid) FROM pg_stat_activity WHERE query LIKE '%sleepers%' AND pid <> pg_backend_pid()");
my $oldworker = pgs_status($node, 'worker_pid');
my $log_off = -s $node->logfile;
is(kill('KILL', $victim), 1, "SIGKILL backend $victim");
ok($node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_off),
	'postmaster reinitializes after the backend crash');
pgs_stop_bg($sleepers, wait => 1);
ok( $node->poll_query_until('postgres',
		"SELECT worker_pid IS NOT NULL AND worker_pid <> $oldworker FROM pgsentinel_status()"),
	'a new worker after the crash');
ok(pgs_wait_samples($node, 10), 'sampling resumes after the crash');
my $bg = pgs_start_bg($node, "SELECT pg_sleep(600) /* aftercrash */");
ok(pgs_wait_sessions($node, 1, '%aftercrash%'), 'a new session sleeps');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) >= 3 FROM pg_active_session_history WHERE query LIKE '%aftercrash%'"),
	'new rows after the crash');
ok($node->poll_query_until('postgres', "SELECT diagnosis ~ '^ok' FROM pgsentinel_status()"),
	'diagnosis ok after the crash');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE pid = $victim AND ash_time > (SELECT worker_started FROM pgsentinel_status())"),
	'0', 'the killed backend is not sampled after the crash');
pgs_stop_bg($bg);

$node->stop;
done_testing();
