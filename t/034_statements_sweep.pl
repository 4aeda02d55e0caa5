
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
$node->append_conf('postgresql.conf', "pgsentinel_pgssh.sweep_interval = 0\n");
$node->reload;
ok( $node->poll_query_until('postgres',
		"SELECT setting = '0' FROM pg_settings WHERE name = 'pgsentinel_pgssh.sweep_interval'"),
	'sweeps turned off');
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

done_testing();
