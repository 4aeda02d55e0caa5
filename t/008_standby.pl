
# Reliability 8: hot standby.  Primary and streaming replica both preload
# pgsentinel; the standby has its own sampler and its own history, in which
# a read-only query on the standby appears; no pgsentinel error in its log.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $primary = pgs_node('primary', init_opts => { allows_streaming => 1 });
$primary->backup('bkp');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'standby in recovery');
ok( $standby->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pgsentinel'"),
	'sampler worker running on the standby');
# the extension was created on the primary and replicated
is( $standby->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel'"),
	$primary->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel'"),
	'extension replicated to the standby');
my $spid = $standby->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'pgsentinel'");
is(pgs_status($standby, 'worker_pid'), $spid, 'standby status shows its own worker');
ok(pgs_wait_samples($standby, 20), 'standby samples');

my $bg = pgs_start_bg($standby, 'SELECT pg_sleep(600) /* onstandby */');
ok(pgs_wait_sessions($standby, 1, '%onstandby%'), 'read-only query running on the standby');
ok( $standby->poll_query_until('postgres',
		"SELECT count(*) >= 3 FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* onstandby%' AND wait_event = 'PgSleep'"),
	'the standby query is in the standby history');
# (rows of the sleep itself: a sample between parse analysis and executor
# start shows the statement's query id with its command type still unknown)
is( $standby->safe_psql('postgres',
		"SELECT DISTINCT concat_ws('|', datname, state, cmdtype, queryid IS NOT NULL) FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* onstandby%' AND wait_event = 'PgSleep'"),
	'postgres|active|SELECT|t',
	'standby rows: database, state, cmdtype, queryid');
is( $primary->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* onstandby%'"),
	'0',
	'the standby query is not in the primary history');

# the startup process replaying WAL may be sampled; never an error
$primary->safe_psql('postgres', 'CREATE TABLE t AS SELECT g FROM generate_series(1, 100000) g');
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', 'SELECT count(*) FROM t'), '100000', 'replication works');
like(pgs_status($standby, 'diagnosis'), qr/^ok/, 'standby diagnosis ok');
pgs_stop_bg($bg);

# a recovery conflict: a standby query holds a lock on t while the primary
# drops t; replay waits max_standby_streaming_delay, then cancels the query.
# The victim is sampled until then, and sampling goes on after.
$standby->append_conf('postgresql.conf', "max_standby_streaming_delay = 1s\n");
$standby->reload;
my $victim = pgs_start_bg($standby,
	'BEGIN; SELECT count(*) FROM t; SELECT pg_sleep(600) /* conflictvictim */; COMMIT');
ok( $standby->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE query LIKE '%conflictvictim%' AND wait_event = 'PgSleep'"),
	'the query that will conflict is sampled on the standby');
my $before = pgs_status($standby, 'samples_taken');
$primary->safe_psql('postgres', 'DROP TABLE t');
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', "SELECT to_regclass('t') IS NULL"), 't',
	'the DROP was replayed after the conflict');
pgs_stop_bg($victim, wait => 1);
like($victim->{err}, qr/conflict with recovery/, 'the standby query was cancelled by the recovery conflict');
# (the cancelled backend flushes its statistics later, at the latest when
# it exits, which may be after its client has gone; the replay may find
# the query holding its snapshot or a buffer pin before its lock)
ok( $standby->poll_query_until('postgres',
		"SELECT confl_lock + confl_snapshot + confl_bufferpin + confl_deadlock >= 1 FROM pg_stat_database_conflicts WHERE datname = 'postgres'"),
	'pg_stat_database_conflicts counts it');
ok( $standby->poll_query_until('postgres',
		"SELECT samples_taken > $before + 20 FROM pgsentinel_status()"),
	'sampling goes on through the conflict');
like(pgs_status($standby, 'diagnosis'), qr/^ok/, 'standby diagnosis ok after the conflict');

# promote: the sampler goes on
my $samples = pgs_status($standby, 'samples_taken');
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 'standby promoted');
ok( $standby->poll_query_until('postgres',
		"SELECT samples_taken > $samples + 20 FROM pgsentinel_status()"),
	'sampling continues after promotion');

my $slog = slurp_file($standby->logfile);
my @errs = grep { /pgsentinel/ && /ERROR|FATAL|PANIC|WARNING/ } split /\n/, $slog;
is(scalar(@errs), 0, 'no pgsentinel error in the standby log') or diag join("\n", @errs);
unlike($slog, qr/terminated by signal|TRAP/, 'no crash on the standby');

$standby->stop;
$primary->stop;
done_testing();
