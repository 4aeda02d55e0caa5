
# The statements worker's sweeps (pgsentinel_pgssh.sweep_interval): every
# statement of pg_stat_statements whose counters changed since the previous
# sweep gets a reading, so that statements no sample sees have their calls
# in the statements history; an unchanged one gets none; its deltas add up
# to its calls: from zero for a statement created since the previous
# sweep, and from its last counters when its last reading is about to be
# overwritten in the ring; with sweeps off, only sampled statements are
# read.
#
# One sample a second and statements of microseconds: samples almost never
# see them, only sweeps read them.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('sweep', conf => q{
pgsentinel_ash.sampling_period = 1
pgsentinel_pgssh.sweep_interval = 1
pgsentinel_pgssh.max_entries = 1000
pgsentinel_archive.interval = 1s
});

ok( $node->poll_query_until('postgres',
		"SELECT pgssh_state = 'ok' FROM pgsentinel_status()"),
	'statements history ok');

# Run $sql $n times in one session (a few milliseconds in all).
sub run_times
{
	my ($sql, $n) = @_;
	$node->safe_psql('postgres', join('', map { "$sql;\n" } 1 .. $n));
}

sub queryid_of
{
	my ($marker) = @_;
	return $node->safe_psql('postgres',
		"SELECT queryid FROM pg_stat_statements WHERE query LIKE '%$marker%' AND toplevel");
}

# Set pgsentinel_pgssh.sweep_interval to $secs and wait until the server
# has it (one test result, named $name).
sub set_sweep_interval
{
	my ($secs, $name) = @_;
	$node->append_conf('postgresql.conf', "pgsentinel_pgssh.sweep_interval = $secs\n");
	$node->reload;
	ok( $node->poll_query_until('postgres',
			"SELECT setting = '$secs' FROM pg_settings WHERE name = 'pgsentinel_pgssh.sweep_interval'"),
		$name);
}

# wait until the sampler has taken $n more samples
sub samples_pass
{
	my ($n) = @_;
	my $s = pgs_status($node, 'samples_taken');
	return $node->poll_query_until('postgres',
		"SELECT samples_taken >= $s + $n FROM pgsentinel_status()");
}

run_times("SELECT pg_catalog.upper('a') /* sweptprobe */", 100);
my $qid = queryid_of('sweptprobe');
like($qid, qr/^-?\d+$/, 'pg_stat_statements has the statement');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_statements_history
		  WHERE queryid = $qid AND calls = 100"),
	'a sweep read the statement with its 100 calls');

# the deltas of a statement, in the order of their readings
sub deltas_of
{
	my ($q) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(calls::text, ',' ORDER BY ash_time)
		   FROM pg_stat_statements_history_deltas('-infinity', 'infinity')
		  WHERE queryid = $q AND toplevel");
}

# How many samples saw the statement: a sample can catch one of its
# executions (a fraction of a millisecond a second); its request then
# reads the statement too, and the checks of what sweeps alone read are
# skipped (rarely: the statements take a few milliseconds in all).
sub samples_saw
{
	my ($q) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_active_session_history WHERE queryid = $q");
}

# unchanged: no more readings, whatever the sweeps
ok(samples_pass(3), 'three more samples, each with a sweep');
SKIP:
{
	skip 'a sample saw the statement', 1 if samples_saw($qid) > 0;
	is( $node->safe_psql('postgres',
			"SELECT string_agg(calls::text, ',' ORDER BY ash_time)
			   FROM pg_stat_statements_history WHERE queryid = $qid"),
		'0,100', 'created since the previous sweep: read with zeros at that sweep, then not again');
	is(deltas_of($qid), '100', 'its deltas hold its first 100 calls');
}

# 50 more calls: the next sweep reads it, the delta is exactly those calls
run_times("SELECT pg_catalog.upper('a') /* sweptprobe */", 50);
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_statements_history
		  WHERE queryid = $qid AND calls = 150"),
	'the next sweep read its 150 calls');
SKIP:
{
	skip 'a sample saw the statement', 1 if samples_saw($qid) > 0;
	is(deltas_of($qid), '100,50', 'the delta between the two readings is the 50 calls');
}

# The ring (1,000 readings) overwritten by 1,200 statements created and run
# once each, read a quarter of the ring a sweep at most: the statement's
# last reading is gone when it runs again, so the sweep that reads it
# writes its last counters before it, and the delta is still there.
my $before = $node->safe_psql('postgres',
	"SELECT max(ash_time) FROM pg_stat_statements_history WHERE queryid = $qid");
$node->safe_psql('postgres',
	"DO \$\$BEGIN FOR i IN 1..1200 LOOP EXECUTE format('CREATE FUNCTION pgs_f%s() RETURNS int LANGUAGE sql AS ''SELECT %s''', i, i); END LOOP; END\$\$");
run_times(join(";\n", map { "SELECT pgs_f$_()" } 1 .. 1200), 1);
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_statements_history
		  WHERE queryid = $qid AND ash_time <= '$before'"),
	'its readings were overwritten in the ring');
run_times("SELECT pg_catalog.upper('a') /* sweptprobe */", 25);
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_statements_history
		  WHERE queryid = $qid AND calls = 175"),
	'a sweep read its 175 calls');
SKIP:
{
	skip 'a sample saw the statement', 1 if samples_saw($qid) > 0;
	is(deltas_of($qid), '25', 'the delta of its 25 calls, from the counters written before it');
}

# pgsentinel_reset() hides the readings the worker's memory refers to: the
# next sweep reads every statement again, this one unchanged included, so
# that its next change has a reading to be a delta from.
$node->safe_psql('postgres', 'SELECT pgsentinel_reset()');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_statements_history
		  WHERE queryid = $qid AND calls = 175"),
	'after a reset, the next sweep reads it again, unchanged');

# sweeps off: a statement no sample sees gets no reading
set_sweep_interval(0, 'sweeps turned off');
ok(samples_pass(2), 'the sampler took the setting');
run_times("SELECT pg_catalog.lower('a') /* offprobe */", 100);
my $qid2 = queryid_of('offprobe');
like($qid2, qr/^-?\d+$/, 'pg_stat_statements has the other statement');
ok(samples_pass(3), 'three more samples');
SKIP:
{
	skip 'a sample saw the statement', 1 if samples_saw($qid2) > 0;
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_statements_history WHERE queryid = $qid2"),
		'0', 'without sweeps, a statement no sample sees has no reading');
}

# on again: the first sweep reads it
$node->append_conf('postgresql.conf', "pgsentinel_pgssh.sweep_interval = 1\n");
$node->reload;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_statements_history
		  WHERE queryid = $qid2 AND calls = 100"),
	'sweeps on again: the statement is read');

# A statement created since a complete sweep and read first because a
# sample saw it: its zeros at that sweep come with that first reading, and
# its deltas (and the archive's) hold every call.  No sweep comes in
# between (an hour's interval), so a zero only a sweep wrote would be
# missing here; written by a later sweep it came too late for the archive.
# (pg_stat_statements emptied first: a sweep then reads all of it, within
# its budget, and is complete.)
$node->safe_psql('postgres', 'SELECT pg_stat_statements_reset()');
ok(samples_pass(3), 'two sweeps of the few statements since');
set_sweep_interval(3600, 'sweeps once an hour');
ok(samples_pass(2), 'the sampler and the worker took the setting');
run_times("SELECT pg_catalog.upper('b'), pg_catalog.pg_sleep(0.0) /* sampledprobe */", 40);
run_times("SELECT pg_catalog.upper('b'), pg_catalog.pg_sleep(2.5) /* sampledprobe */", 1);
my $qid3 = queryid_of('sampledprobe');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_statements_history
		  WHERE queryid = $qid3 AND calls = 40"),
	'a sample saw the statement: its request read it');
is( $node->safe_psql('postgres',
		"SELECT sum(calls) FROM pg_stat_statements_history_deltas('-infinity', 'infinity')
		  WHERE queryid = $qid3 AND toplevel AND ash_time <=
		        (SELECT max(ash_time) FROM pg_stat_statements_history
		          WHERE queryid = $qid3 AND calls = 40)"),
	'40', 'its deltas up to that reading hold its first 40 calls, from zeros at the sweep');
my $last = $node->safe_psql('postgres',
	"SELECT max(sample_id) FROM pg_stat_statements_history
	  WHERE queryid = $qid3 AND calls = 40");
ok( $node->poll_query_until('postgres',
		"SELECT statements_last_sample_id >= $last FROM pgsentinel_archive_state"),
	'the archiver took that reading');
is( $node->safe_psql('postgres',
		"SELECT sum(calls) FROM pgsentinel_statements_archive
		  WHERE queryid = $qid3 AND toplevel AND sample_id <= $last"),
	'40', 'the archive holds them too');

done_testing();
