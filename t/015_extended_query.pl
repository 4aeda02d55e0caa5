
# Statements sent with the extended query protocol (drivers such as JDBC,
# Npgsql, psycopg 3) that fail.  Such a statement is not the client's
# query string by pointer, so the hooks count it as nested in itself; when
# it fails its ExecutorEnd does not run and its text is freed with the
# aborted transaction.  The hooks must forget it then: before they did, the
# next statements ran "above" the failed ones and, when a nested statement
# ended, published the freed text of a failed one as its parent -- garbage
# in the history, or a SIGSEGV and a restart of every backend when the
# freed text was big (its memory given back to the system).  The client is
# a small libpq program (t/extended_query_client.c), built here.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('extended');

# --- the client --------------------------------------------------------------
my ($incdir, $libdir) = $node->config_data(qw(--includedir --libdir));
my $client = $node->basedir . '/extended_query_client';
my ($cc_out, $cc_err) = ('', '');
my $built = IPC::Run::run(
	[
		$ENV{CC} // 'gcc', '-o', $client,
		"$FindBin::RealBin/extended_query_client.c", "-I$incdir",
		"-L$libdir", "-Wl,-rpath,$libdir", '-lpq'
	],
	'>', \$cc_out, '2>', \$cc_err);
ok($built, 'libpq client built') or diag($cc_err);

$node->safe_psql('postgres', q{
	CREATE FUNCTION pgs_ext_nested() RETURNS int LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM count(*) FROM generate_series(1, 10);
		RETURN 1;
	END $$;
});

# The table the client's last statement waits for, locked until the lock
# wait has been sampled.
$node->safe_psql('postgres', 'CREATE TABLE pgs_ext_locked (i int)');
my $holder = pgs_start_bg($node, q{
	BEGIN;
	LOCK TABLE pgs_ext_locked;
	SELECT pg_sleep(600) /* ext-holder */;
});
ok(pgs_wait_sessions($node, 1, '%ext-holder%'), 'lock held');

# --- failed extended-protocol statements, then more ---------------------------
my ($out, $err) = ('', '');
my $run = IPC::Run::start([ $client, $node->connstr('postgres'), 1024 * 1024 ],
	'>', \$out, '2>', \$err);
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) >= 3 FROM pg_active_session_history
		WHERE wait_event_type = 'Lock' AND query LIKE '%ext-second%'}),
	'the lock wait of the last statement sampled');
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%ext-holder%' AND pid <> pg_backend_pid()");
$run->finish;
pgs_stop_bg($holder);
note($out);
like($out, qr/^pid \d+$/m, 'client connected');
my ($pid) = $out =~ /^pid (\d+)$/m;
is(scalar(() = $out =~ /^fail (?:small|big): PGRES_FATAL_ERROR$/mg),
	6, 'the failing statements failed');
is(scalar(() = $out =~ /^nested(?: again)?: PGRES_TUPLES_OK$/mg),
	4, 'the statements after them ran');
like($out, qr/^connection ok$/m, 'the session survived')
  or diag($err);

my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal/, 'no backend crashed');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'server up');

# The sleep after the failures is sampled with its own text (the client
# sleeps until it saw so, asking with statements tagged ext-sleep-check):
# the rows of the session name no statement but the ones it ran (a short
# one, such as SELECT 1 or BEGIN, is sampled too on a slow host).
like($out, qr/^sleep: sampled$/m, 'the client saw its sleep sampled');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE pid = $pid AND query = 'SELECT pg_sleep(0.1) /* ext-sleep */'"
	),
	'the sleep after the failures is in the history');
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM pg_active_session_history
		WHERE pid = $pid AND (query IS NULL OR (query NOT LIKE '%ext-sleep%'
			AND query NOT LIKE '%pgs_ext_nested%'
			AND query NOT LIKE '%generate_series%'
			AND query NOT LIKE '%ext-first%'
			AND query NOT LIKE '%ext-second%'
			AND query NOT IN ('SELECT 1', 'BEGIN', 'ROLLBACK')))}),
	'0', "every row of the session shows one of its own statements");
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FILTER (WHERE query NOT LIKE '%ext-second%'
		                           OR top_level_query NOT LIKE '%ext-second%')
		FROM pg_active_session_history
		WHERE pid = $pid AND wait_event_type = 'Lock'}),
	'0', 'the lock wait while parsed shows the statement parsed, not the one before');

# The lock wait happened in Parse, before the statement had a query id; the
# client had disconnected before the sampler could read it in
# pg_stat_activity.  The backend answered the sampler's request at Execute
# (another statement start, the same text).
ok( $node->poll_query_until('postgres', qq{
		SELECT bool_and(queryid IS NOT NULL) FROM pg_active_session_history
		WHERE pid = $pid AND wait_event_type = 'Lock'}),
	'the lock-wait rows got their query id');
is( $node->safe_psql('postgres', qq{
		SELECT bool_and(a.queryid = s.queryid)
		FROM pg_active_session_history a
		JOIN pg_stat_statements s ON s.query = 'SELECT count(*) FROM pgs_ext_locked /* ext-second */'
		WHERE a.pid = $pid AND a.wait_event_type = 'Lock'}),
	't', 'the query id pg_stat_statements has for the statement');

$node->stop;
done_testing();
