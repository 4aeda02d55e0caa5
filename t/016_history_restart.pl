
# The history survives a restart: saved by the postmaster at a clean
# shutdown (pg_stat/pgsentinel_history.stat), restored at the next start
# with its texts, sample ids going on from the last one.  The newest rows
# and texts are kept when the rings or the text area became smaller.  A
# damaged or foreign file is logged and ignored (the server starts, the
# history is empty); none is written after a crash or with
# pgsentinel.save_history = off.  An immediate shutdown still writes one.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('restart', conf => "pgsentinel_ash.max_entries = 100000\n");
my $file = $node->data_dir . '/pg_stat/pgsentinel_history.stat';

# The log written since $offset.
sub log_since
{
	my ($offset) = @_;
	return substr(slurp_file($node->logfile), $offset);
}

ok($node->poll_query_until('postgres', "SELECT pgssh_state = 'ok' FROM pgsentinel_status()"),
	'statements history reading');

# Cancel the statements tagged /* $tag */ and wait for their client $h
# to end: sleeps last until they were sampled as much as a test needs,
# however slow the sampler.
sub cancel_tagged
{
	my ($h, $tag) = @_;
	$node->safe_psql('postgres',
		"SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE query LIKE '%$tag%' AND pid <> pg_backend_pid()");
	pgs_stop_bg($h, wait => 1);
}

# A tagged sleep, sampled, from an application with a name.  Run once
# before, untagged, so that pg_stat_statements has its entries while it is
# sampled: the statements history does not depend on reading it once more
# at the sample after it ended.
$node->safe_psql('postgres',
	"SET application_name = 'warm_up'; SELECT pg_sleep(0.001) /* warm-up */");
my $h = pgs_start_bg($node,
	"SET application_name = 'before_restart_app'; SELECT pg_sleep(600) /* before-restart */");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) >= 5 FROM pg_active_session_history WHERE query LIKE '%before-restart%' AND wait_event = 'PgSleep'"),
	'tagged sleep sampled');
cancel_tagged($h, 'before-restart');
pgs_wait_samples($node, 3);

my $tagged_sql = q{
	SELECT count(*) || ' ' || string_agg(DISTINCT query || '|' || application_name || '|' || wait_event, ',')
	FROM pg_active_session_history
	WHERE query LIKE '%before-restart%' AND wait_event = 'PgSleep'};
my $tagged = $node->safe_psql('postgres', $tagged_sql);
my ($rows_before, $max_before) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), max(sample_id) FROM pg_active_session_history');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_statements_history WHERE sample_id <= $max_before"),
	'statements history has rows');
# The statements worker reads a sample's statements after the sample, in
# sample order: once it wrote a reading of a later sample, the samples
# counted here were read.
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_statements_history WHERE sample_id > $max_before"),
	'statements history read past the samples counted');
# A statement the worker meets for the first time since its last sweep
# gets a reading of zeros at that sweep's sample (docs/columns.md), which
# is before $max_before: the only writer is stopped before counting, so
# that nothing is written between the count and the shutdown; it starts
# again with the restart.
$node->safe_psql('postgres',
	'ALTER SYSTEM SET pgsentinel_pgssh.enable = off; SELECT pg_reload_conf()');
ok( $node->poll_query_until('postgres',
		"SELECT pgssh_state = 'disabled' AND pgssh_worker_pid IS NULL FROM pgsentinel_status()"),
	'statements worker stopped');
my $pgssh_before = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_statements_history WHERE sample_id <= $max_before");
$node->safe_psql('postgres', 'ALTER SYSTEM RESET pgsentinel_pgssh.enable');

# --- clean restart ------------------------------------------------------------
my $offset = -s $node->logfile;
$node->restart;
my $log = log_since($offset);
like($log, qr/pgsentinel saved \d+ rows of active session history, \d+ rows of statements history and \d+ texts/,
	'saved at shutdown');
like($log, qr/pgsentinel restored \d+ rows of active session history/, 'restored at start');
ok(!-e $file, 'the file is removed once read');

is($node->safe_psql('postgres', $tagged_sql), $tagged,
	'the tagged rows came back with their texts and application name');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE sample_id <= $max_before"),
	$rows_before, 'every row sampled before the restart is back');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_statements_history WHERE sample_id <= $max_before"),
	$pgssh_before, 'and every statements history row');
$h = pgs_start_bg($node, "SELECT pg_sleep(600) /* after-restart */");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE query LIKE '%after-restart%'"),
	'sampling after the restart');
cancel_tagged($h, 'after-restart');
is( $node->safe_psql('postgres', qq{
		SELECT min(sample_id) > $max_before FROM pg_active_session_history
		WHERE ash_time > (SELECT pg_postmaster_start_time())}),
	't', 'sample ids go on after the restored ones');

# --- smaller ring and text area: the newest rows and texts are kept ------------
# 30 sessions sleep until the ring holds more rows than the smaller ring
# will (at whatever pace the sampler keeps)
my $pgb = pgs_start_sleepers($node, 30, 600, 'many-sleepers');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 1100 FROM pg_active_session_history"),
	'more than 1100 rows in the ring');
cancel_tagged($pgb, 'many-sleepers');
pgs_wait_samples($node, 2);
my ($nrows, $newest_1000th, $newest) = split /\|/, $node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM pg_active_session_history),
	       (SELECT sample_id FROM pg_active_session_history
	        ORDER BY sample_id DESC LIMIT 1 OFFSET 999),
	       (SELECT max(sample_id) FROM pg_active_session_history)});
cmp_ok($nrows, '>', 1000, 'more rows than the smaller ring will hold');
# (one sample an hour after the restart, so that new rows do not push the
# restored ones out of the small ring before they are looked at)
$node->append_conf('postgresql.conf',
	"pgsentinel_ash.max_entries = 1000\npgsentinel_ash.text_area_size = 64kB\n"
	  . "pgsentinel_ash.sampling_period = 3600\n");
$offset = -s $node->logfile;
$node->restart;
like(log_since($offset), qr/restored 1000 rows of active session history.*\n.*DETAIL:  The file held \d+,/,
	'1000 rows restored of the file\'s more, and said so');
# (the sessions of the test itself are sampled until the shutdown: the
# newest 1000 rows then may be newer than those counted above, never older)
is( $node->safe_psql('postgres', qq{
		SELECT count(*) = 1000
		   AND min(sample_id) FILTER (WHERE restored) >= $newest_1000th
		   AND max(sample_id) FILTER (WHERE restored) >= $newest
		FROM (SELECT sample_id, ash_time < pg_postmaster_start_time() AS restored
		      FROM pg_active_session_history) h}),
	't', 'the newest rows are the ones restored');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE query IS NULL OR application_name IS NULL)
		FROM pg_active_session_history
		WHERE sample_id = (SELECT max(sample_id) FROM pg_active_session_history
		                   WHERE ash_time < (SELECT pg_postmaster_start_time()))}),
	'0', 'the newest restored rows have their texts');
$node->append_conf('postgresql.conf', "pgsentinel_ash.sampling_period = 0.01\n");

# --- a damaged file is ignored --------------------------------------------------
$node->stop;
ok(-e $file, 'file written at shutdown');
{
	open(my $fh, '+<', $file) or die "open $file: $!";
	binmode $fh;
	seek($fh, (-s $file) / 2, 0);
	read($fh, my $byte, 1);
	seek($fh, (-s $file) / 2, 0);
	print $fh chr(ord($byte) ^ 0xFF);
	close $fh;
}
$offset = -s $node->logfile;
$node->start;
like(log_since($offset), qr/pgsentinel history file "pg_stat\/pgsentinel_history.stat" ignored: its checksum does not match/,
	'a damaged file: logged');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_active_session_history
		WHERE ash_time < (SELECT pg_postmaster_start_time())}),
	'0', 'a damaged file: nothing restored');
ok(!-e $file, 'a damaged file: removed');

$node->stop;
{
	open(my $fh, '>', $file) or die "open $file: $!";
	print $fh 'not a history file';
	close $fh;
}
$offset = -s $node->logfile;
$node->start;
like(log_since($offset), qr/ignored: not a pgsentinel history file/, 'a foreign file: logged');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'a foreign file: the server runs');

# --- nothing written after a crash ------------------------------------------------
pgs_wait_samples($node, 3);
my $victim = pgs_start_bg($node, 'SELECT pg_sleep(60) /* victim */');
ok(pgs_wait_sessions($node, 1, '%victim%'), 'a session to kill');
my $victim_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE '%victim%' AND pid <> pg_backend_pid()");
$offset = -s $node->logfile;
kill 'KILL', $victim_pid;
pgs_stop_bg($victim);
ok( $node->poll_query_until('postgres',
		"SELECT samples_taken > 2 FROM pgsentinel_status()"),
	'sampling again after the crash');
unlike(log_since($offset), qr/pgsentinel saved/, 'no file written after a crash');
ok(!-e $file, 'no file after a crash');

# --- immediate shutdown: the workers are killed wherever they are, the
# postmaster still exits normally and writes the whole rows -------------------------
$h = pgs_start_bg($node, "SELECT pg_sleep(60) /* immediate */");
ok(pgs_wait_sessions($node, 1, '%immediate%'), 'a session sleeping');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 3 FROM pg_active_session_history WHERE query LIKE '%immediate%' AND wait_event = 'PgSleep'"),
	'and sampled');
$offset = -s $node->logfile;
$node->stop('immediate');
pgs_stop_bg($h);
like(log_since($offset), qr/pgsentinel saved/, 'immediate shutdown: saved');
$node->start;
is( $node->safe_psql('postgres', q{
		SELECT count(*) > 3 AND bool_and(pid > 0 AND sample_id > 0 AND ash_time IS NOT NULL)
		FROM pg_active_session_history
		WHERE query LIKE '%immediate%' AND wait_event = 'PgSleep'
		  AND ash_time < (SELECT pg_postmaster_start_time())}),
	't', 'immediate shutdown: whole rows restored');

# --- pgsentinel.save_history = off -------------------------------------------------
$node->append_conf('postgresql.conf', "pgsentinel.save_history = off\n");
$node->reload;
pgs_wait_samples($node, 3);
$offset = -s $node->logfile;
$node->restart;
unlike(log_since($offset), qr/pgsentinel (saved|restored)/, 'save_history off: nothing saved');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_active_session_history
		WHERE ash_time < (SELECT pg_postmaster_start_time())}),
	'0', 'save_history off: the history starts empty');

$node->stop;
done_testing();
