
# The fleet (docs/fleet.md): two primaries (logical) and a standby of one of
# them (pull) feed one repository.  The repository is stopped during
# sampling and started again: it catches up with no gap and no duplicate
# (the lists of samples of each source and of the repository are equal).
# The fleet's AAS per server equals each server's own over the same window.
# The standby is promoted: the pull goes on, then it switches to logical
# and its archive's copy (which holds the old primary's samples from before
# the promotion) adds nothing already pulled nor anything of another
# server.  The statements history travels too: p1's deltas in the
# repository are its archive's, not doubled when copied again; s1's pulled
# deltas are its ring's.  keep_one_in = 1, so that every sample is archived.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

# The rings hold the whole test: a comparison of a source's own history
# with the repository's reads the ring, and a reader skips the rows the
# sampler overwrites while it scans (t/005_ring_wrap.pl), which a loaded
# machine makes slow enough to happen.
my $conf = "pgsentinel_archive.interval = 200ms\n"
  . "pgsentinel_archive.keep_one_in = 1\n"
  . "pgsentinel_ash.max_entries = 200000\n"
  . "max_replication_slots = 10\n"
  . "max_logical_replication_workers = 10\nmax_worker_processes = 20\n";
my $p1 = pgs_node('p1', conf => $conf . "max_wal_senders = 10\n", init_opts => { allows_streaming => 'logical' });
my $p2 = pgs_node('p2', conf => $conf . "max_wal_senders = 10\n", init_opts => { allows_streaming => 'logical' });
$p1->backup('bkp');
my $s1 = PostgreSQL::Test::Cluster->new('s1');
$s1->init_from_backup($p1, 'bkp', has_streaming => 1);
# its statements ring holds minutes, not seconds: the test compares it
# with what the repository pulled
# An idle transaction sampled there (track_idle_trans) writes rows of weight
# 0: its samples' active sessions leave them out, pulled or not.
$s1->append_conf('postgresql.conf',
	"pgsentinel_pgssh.max_entries = 200000\npgsentinel_ash.max_entries = 200000\n"
	  . "pgsentinel_ash.track_idle_trans = on\n");
$s1->start;
my $s1_idle = $s1->background_psql('postgres');
# (its timer runs per query: the session outlives the default timeout)
$s1_idle->set_query_timer_restart;
$s1_idle->query_safe('BEGIN; SELECT 1');
my $repo = pgs_node('repo', conf => $conf);
$repo->safe_psql('postgres', 'CREATE SCHEMA fleet_ext; CREATE EXTENSION dblink SCHEMA fleet_ext; CREATE EXTENSION postgres_fdw');

# p1's archive holds a day the repository has no archive partition of: its
# initial copy lands in the repository's DEFAULT partition, and the trigger
# files it under p1 in a partition made for that day.
my $old_day = $p1->safe_psql('postgres', q{
	SELECT timezone('UTC', now())::date - 3});
$p1->safe_psql('postgres', qq{
	CREATE TABLE pgsentinel_archive_batch_old PARTITION OF pgsentinel_archive_batch
	  FOR VALUES FROM (timezone('UTC', '$old_day'::timestamp))
	  TO (timezone('UTC', '$old_day'::timestamp + interval '1 day'));
	INSERT INTO pgsentinel_archive_batch (first_time, last_time, sample_data, row_data)
	VALUES (timezone('UTC', '$old_day 12:00'::timestamp), timezone('UTC', '$old_day 12:00'::timestamp),
	        pgsentinel_sample_pack('{0}', '{0}', '{1}', '{1}', '{0}', '{f}'),
	        pgsentinel_batch_pack(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL))});

# a session to sample on each source
my @bg = map { pgs_start_bg($_->[0], "SELECT pg_sleep(600) /* fleet $_->[1] */") }
  ([$p1, 'p1'], [$p2, 'p2'], [$s1, 's1']);

# setup errors first
my ($ret, $out, $err) = $repo->psql('postgres',
	"SELECT pgsentinel_fleet_add('s1', \$\$" . $s1->connstr('postgres') . "\$\$, 'logical')");
like($err, qr/is a standby: it cannot publish/, 'a standby cannot be added as logical');
($ret, $out, $err) = $repo->psql('postgres',
	"SELECT pgsentinel_fleet_add('nope', 'host=/nonexistent port=1 dbname=postgres', 'pull')");
like($err, qr/cannot connect to fleet server "nope"/, 'unreachable source: clear error');

# A source whose archive is in another format (an earlier build of 2.1,
# its batches' row columns as columns, not a versioned payload) cannot
# publish to this one: logical replication could not map its columns.  Made so in a
# database of its own, where no archiver writes.
$p1->safe_psql('postgres', 'CREATE DATABASE oldformat');
$p1->safe_psql('oldformat', q{
	CREATE EXTENSION pgsentinel CASCADE;
	ALTER TABLE pgsentinel_archive_batch RENAME COLUMN row_data TO row_data_old});
($ret, $out, $err) = $repo->psql('postgres',
	"SELECT pgsentinel_fleet_add('oldformat', \$\$" . $p1->connstr('oldformat') . "\$\$, 'logical')");
like($err, qr/archive of fleet server "oldformat" is not in this repository's format/,
	'a source whose archive is in another format cannot be added as logical');
is($repo->safe_psql('postgres', "SELECT count(*) FROM pgsentinel_fleet_status WHERE name = 'oldformat'"),
	'0', 'and nothing of it is left');
# the statements history's batches are checked too
$p1->safe_psql('oldformat', q{
	ALTER TABLE pgsentinel_archive_batch RENAME COLUMN row_data_old TO row_data;
	ALTER TABLE pgsentinel_archive_statement_batch RENAME COLUMN row_data TO row_data_old});
($ret, $out, $err) = $repo->psql('postgres',
	"SELECT pgsentinel_fleet_add('oldformat', \$\$" . $p1->connstr('oldformat') . "\$\$, 'logical')");
like($err, qr/archive of fleet server "oldformat" is not in this repository's format/,
	'a source whose statements history is in another format cannot be added as logical');
$p1->safe_psql('postgres', 'DROP DATABASE oldformat');

# A payload's texts are bytes to logical replication: a source in another
# encoding would land texts its readers refuse.  A pull converts them.
my $repo_encoding = $repo->safe_psql('postgres', 'SHOW server_encoding');
my $other_encoding = $repo_encoding eq 'LATIN1' ? 'UTF8' : 'LATIN1';
$p1->safe_psql('postgres',
	"CREATE DATABASE otherenc ENCODING '$other_encoding' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
$p1->safe_psql('otherenc', 'CREATE EXTENSION pgsentinel CASCADE');
($ret, $out, $err) = $repo->psql('postgres',
	"SELECT pgsentinel_fleet_add('otherenc', \$\$" . $p1->connstr('otherenc') . "\$\$, 'logical')");
like($err, qr/fleet server "otherenc" is in encoding $other_encoding but this repository is in $repo_encoding/,
	'a source in another encoding cannot be added as logical');
like($err, qr/HINT:  .*method => 'pull'/, 'and the hint names the pull');
is($repo->safe_psql('postgres', "SELECT count(*) FROM pgsentinel_fleet_status WHERE name = 'otherenc'"),
	'0', 'and nothing of it is left');
$p1->safe_psql('postgres', 'DROP DATABASE otherenc');

for my $n ([$p1, 'p1', 'logical'], [$p2, 'p2', 'logical'], [$s1, 's1', 'pull'])
{
	$repo->safe_psql('postgres',
		"SELECT pgsentinel_fleet_add('$n->[1]', \$\$" . $n->[0]->connstr('postgres')
		  . "\$\$, '$n->[2]', pull_interval => '200ms')");
}
($ret, $out, $err) = $repo->psql('postgres',
	"SELECT pgsentinel_fleet_add('p1', \$\$" . $p1->connstr('postgres') . "\$\$)");
like($err, qr/fleet server "p1" exists already/, 'name taken: clear error');

# A logical add makes a slot on the source, which a rollback on the
# repository would not undo: not inside a transaction block; and a failure
# after the slot was made (here: the server's row is refused, by a trigger
# of the test's) drops the slot again.
my $slots = "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pgs\\_fleet\\_%'";
my $p2_slots = $p2->safe_psql('postgres', $slots);
($ret, $out, $err) = $repo->psql('postgres',
	"BEGIN; SELECT pgsentinel_fleet_add('p2bis', \$\$" . $p2->connstr('postgres') . "\$\$); COMMIT");
like($err, qr/cannot run inside a transaction block/, 'logical add refused inside a transaction block');
# Nor in an implicit block (several statements in one message) or a
# subtransaction: a rollback of either would leave the slot as well.
my $p2_add = "pgsentinel_fleet_add('p2bis', \$\$" . $p2->connstr('postgres') . "\$\$)";
($ret, $out, $err) = $repo->psql('postgres', '',
	extra_params => [ '-c', "SELECT $p2_add; SELECT 1" ]);
like($err, qr/cannot run inside a transaction block/, 'logical add refused in an implicit transaction block');
($ret, $out, $err) = $repo->psql('postgres',
	"DO \$d\$ BEGIN PERFORM $p2_add; EXCEPTION WHEN division_by_zero THEN NULL; END \$d\$");
like($err, qr/cannot run inside a transaction block/, 'logical add refused in a subtransaction');
is($p2->safe_psql('postgres', $slots), $p2_slots, 'no slot left on the source by the refused adds');
$repo->safe_psql('postgres', q{
	CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
	  $$BEGIN RAISE EXCEPTION 'refused by the test'; END$$;
	CREATE TRIGGER refuse BEFORE INSERT ON pgsentinel_fleet_server
	  FOR EACH ROW EXECUTE FUNCTION refuse()});
($ret, $out, $err) = $repo->psql('postgres',
	"SELECT pgsentinel_fleet_add('p2bis', \$\$" . $p2->connstr('postgres') . "\$\$)");
like($err, qr/refused by the test/, 'a failure after the slot was made is reported');
is($p2->safe_psql('postgres', $slots), $p2_slots, '... and the slot is dropped again on the source');
is($repo->safe_psql('postgres', "SELECT count(*) FROM pg_subscription WHERE subname LIKE 'pgsentinel\\_fleet\\_%'"),
	'2', '... and no subscription is left');
$repo->safe_psql('postgres', 'DROP TRIGGER refuse ON pgsentinel_fleet_server; DROP FUNCTION refuse()');

# The newest sample a source archived (or, for the standby, sampled).
sub newest_source
{
	my ($n, $standby) = @_;
	return $n->safe_psql('postgres',
		$standby ? 'SELECT max(sample_time) FROM pgsentinel_samples()'
		  : 'SELECT last_sample_time FROM pgsentinel_archive_state');
}

# Wait until the repository holds a server's samples up to $t.
sub wait_repo
{
	my ($name, $t, $what) = @_;
	ok( $repo->poll_query_until('postgres',
			"SELECT coalesce(max(sample_time) >= '$t', false) FROM pgsentinel_fleet_sample_archive WHERE server = '$name'"),
		"repository has $name up to the newest sample: $what");
}

# Where a comparison of a server's samples with its source's may start:
# the repository's oldest sample of it, or for the standby, whose history
# is its ring, 1 s after the ring's oldest sample (the ring goes on
# overwriting while the test reads it).
sub compare_from
{
	my ($name) = @_;
	my $ring = $name eq 's1'
	  ? "'" . $s1->safe_psql('postgres', 'SELECT pgsentinel_ring_start()') . "'::timestamptz + interval '1 second'"
	  : "'-infinity'::timestamptz";
	return $repo->safe_psql('postgres',
		"SELECT greatest(min(sample_time), $ring) FROM pgsentinel_fleet_sample_archive WHERE server = '$name'");
}

my %upto;    # per server, the newest sample the comparisons go to

# The standby's ring holds a few minutes here (not the hours of a real
# one, at 10 ms sampling): its comparisons end
# at a newest sample taken now, and the repository is waited for up to it.
sub refresh_standby
{
	$upto{s1} = newest_source($s1, 1);
	wait_repo('s1', $upto{s1}, 'the standby, now');
}

# The list of samples in [$from, $to]: count and digest of their times,
# ids and active sessions.
sub sample_list
{
	my ($n, $rel, $from, $to, $where) = @_;
	$where = $where ? "AND $where" : '';
	return $n->safe_psql('postgres', qq{
		SELECT count(*) || ' ' || md5(coalesce(string_agg(extract(epoch FROM sample_time)::text
		                                                  || ':' || sample_id || ':' || active_sessions,
		                                                  ',' ORDER BY sample_time), ''))
		  FROM $rel WHERE sample_time >= '$from' AND sample_time <= '$to' $where});
}

wait_repo('p1', newest_source($p1), 'start');
wait_repo('p2', newest_source($p2), 'start');
wait_repo('s1', newest_source($s1, 1), 'start');

# every fleet table that holds payloads keeps them as its archive table
# does, uncompressed by TOAST: each server's partition and each day's
is($repo->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT a.attstorage::text, ',')
	  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
	 WHERE a.attname = 'row_data' AND c.relname ~ '^pgsentinel_fleet_(statement_)?batch'}),
	'e', 'the fleet stores payloads as the archive does (EXTERNAL)');

# the day partitions a pull filled are analyzed by it: reports read right
# after a pull are not planned for empty tables
ok( $repo->poll_query_until('postgres', q{
		SELECT count(*) = 2 AND bool_and(s.last_analyze IS NOT NULL)
		  FROM pgsentinel_fleet_server f
		  JOIN pg_stat_user_tables s
		    ON s.relname IN ('pgsentinel_fleet_batch_' || f.server_id || to_char(timezone('UTC', now()), '_YYYYMMDD'),
		                     'pgsentinel_fleet_session_' || f.server_id || to_char(timezone('UTC', now()), '_YYYYMMDD'))
		 WHERE f.name = 's1'}),
	's1: the pull analyzed the day partitions it filled');

is( $repo->safe_psql('postgres', qq{
		SELECT count(*) FROM pgsentinel_fleet_sample_archive
		 WHERE server = 'p1' AND sample_time = timezone('UTC', '$old_day 12:00'::timestamp)}),
	'1', 'a day the repository had no partition of is copied (DEFAULT partition, then the trigger)');

# The repository stops during sampling, then starts again.
my $stopped = newest_source($p1);
$repo->stop('fast');
ok( $p1->poll_query_until('postgres',
		"SELECT last_sample_time > '$stopped'::timestamptz + interval '2 seconds' FROM pgsentinel_archive_state"),
	'p1 archives on while the repository is down');
$repo->start;
%upto = (p1 => newest_source($p1), p2 => newest_source($p2), s1 => newest_source($s1, 1));
wait_repo($_, $upto{$_}, 'after the restart') for qw(p1 p2 s1);

for my $n ([$p1, 'p1', 'pgsentinel_sample_archive'], [$p2, 'p2', 'pgsentinel_sample_archive'],
	[$s1, 's1', 'pgsentinel_samples()'])
{
	my $name = $n->[1];
	refresh_standby() if $name eq 's1';
	my $from = compare_from($name);
	is( sample_list($repo, 'pgsentinel_fleet_sample_archive', $from, $upto{$name}, "server = '$name'"),
		sample_list($n->[0], $n->[2], $from, $upto{$name}),
		"$name: the repository's samples are the source's, none lost, none doubled");
}
is( $repo->safe_psql('postgres',
		'SELECT count(*) - count(DISTINCT (server_id, sample_time)) FROM pgsentinel_fleet_sample_archive'),
	'0', 'no sample twice in the repository');
is( $repo->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM pgsentinel_sample_archive)
		       - (SELECT samples_archived FROM pgsentinel_archive_state)
		       + (SELECT count(*) FROM pgsentinel_archive_batch_fleet)
		       + (SELECT count(*) FROM pgsentinel_archive_session_fleet)}),
	'0', 'the repository\'s own archive holds its own samples only');

# The fleet's AAS per server = the server's own, over a window both hold.
for my $n ([$p1, 'p1'], [$p2, 'p2'], [$s1, 's1'])
{
	my $name = $n->[1];
	refresh_standby() if $name eq 's1';
	my $from = compare_from($name);
	my ($since, $until) = split /\|/, $repo->safe_psql('postgres',
		"SELECT min(sample_time) || '|' || max(sample_time) FROM pgsentinel_fleet_sample_archive WHERE server = '$name' AND sample_time >= '$from' AND sample_time <= '$upto{$name}' AND sample_time > now() - interval '1 day'");
	my $fleet = $repo->safe_psql('postgres',
		"SELECT round(aas::numeric, 9) || ' ' || round(db_time::numeric, 6) FROM pgsentinel_fleet_aas('$since', '$until', server => '$name')");
	# a standby's own report mixes its primary's archive in: its ring is its
	# history (its idle transaction's rows weigh nothing)
	my $own = $name eq 's1'
	  ? $s1->safe_psql('postgres', qq{
		SELECT round((h.t / o.t)::numeric, 9) || ' ' || round(h.t::numeric, 6)
		  FROM (SELECT sum(weight) AS t FROM pg_active_session_history
		         WHERE ash_time >= '$since' AND ash_time < '$until') h,
		       (SELECT sum(sample_period) AS t FROM pgsentinel_samples()
		         WHERE sample_time >= '$since' AND sample_time < '$until') o})
	  : $n->[0]->safe_psql('postgres',
		"SELECT round(aas::numeric, 9) || ' ' || round(db_time::numeric, 6) FROM pgsentinel_aas('$since', '$until')");
	is($fleet, $own, "$name: fleet AAS = its own over the same window");
	cmp_ok((split / /, $fleet)[0], '>', 0, "$name: the sleeper counts");
	# the reports of the repository, given the server, say the same
	is( $repo->safe_psql('postgres',
			"SELECT round(aas::numeric, 9) || ' ' || round(db_time::numeric, 6) FROM pgsentinel_aas('$since', '$until', server => '$name')"),
		$own, "$name: pgsentinel_aas(server => '$name') on the repository = its own");
	is( $repo->safe_psql('postgres',
			"SELECT round(((pgsentinel_report('$since', '$until', format => 'json', server => '$name'))::jsonb #>> '{load,aas}')::numeric, 9)"),
		(split / /, $own)[0], "$name: its one-call report on the repository has its own AAS");
	my $top = "SELECT string_agg(coalesce(key, '-') || ' ' || round(db_time::numeric, 6), ', ' ORDER BY rank) FROM pgsentinel_top('$since', '$until', 'wait_event'";
	is( $repo->safe_psql('postgres', "$top, server => '$name')"),
		$n->[0]->safe_psql('postgres', "$top)"),
		"$name: its top wait events on the repository = its own");
}
like( $repo->safe_psql('postgres',
		"SELECT servers::text FROM pgsentinel_fleet_top_statements(now() - interval '1 hour', now()) WHERE query LIKE 'SELECT pg_sleep(600) /* fleet p1 */%'"),
	qr/^\{p1\}$/, 'top statements across the fleet name the server');
is( $repo->safe_psql('postgres',
		"SELECT string_agg(server, ',' ORDER BY server) FROM pgsentinel_fleet_top_servers(now() - interval '1 hour', now())"),
	'p1,p2,s1', 'top servers lists the fleet');

# The statements history travels with the samples: after p1 ran a
# statement, the repository's deltas of p1 are its archive's (sums of calls
# per statement over the same readings), with their texts, and the fleet's
# top statements show its calls.
$p1->safe_psql('postgres',
	join('', map { "SELECT pg_sleep(0.05) /* fleet statement */;\n" } 1 .. 10));
my $stmt_newest = $p1->safe_psql('postgres', 'SELECT max(sample_id) FROM pg_stat_statements_history');
ok( $p1->poll_query_until('postgres',
		"SELECT statements_history_id = pgsentinel_history_id() AND statements_last_sample_id >= $stmt_newest FROM pgsentinel_archive_state"),
	'p1 archived the statements up to the newest reading');
my $stmt_upto = $p1->safe_psql('postgres', 'SELECT max(ash_time) FROM pgsentinel_archive_statement_delta');
my $stmt_qid = $p1->safe_psql('postgres',
	"SELECT queryid FROM pg_stat_statements WHERE query LIKE 'SELECT pg_sleep(\$1) /* fleet statement */%'");
ok( $repo->poll_query_until('postgres',
		"SELECT coalesce(max(ash_time) >= '$stmt_upto', false) FROM pgsentinel_fleet_statements WHERE server = 'p1'"),
	'the repository has p1\'s statement deltas up to its newest');
wait_repo('p1', newest_source($p1), 'with the statements');

# Per statement of a server, over its readings up to $upto: sum of calls
# and of rows, and the number of readings stored.
sub stmt_sums
{
	my ($n, $rel, $upto, $where) = @_;
	$where = $where ? "AND $where" : '';
	return $n->safe_psql('postgres', qq{
		SELECT count(*) || ' ' || md5(coalesce(string_agg(x, ',' ORDER BY x), '')) FROM (
		  SELECT concat_ws(':', queryid, userid, dbid, toplevel, sum(calls), sum(rows), count(*)) AS x
		    FROM $rel WHERE ash_time <= '$upto' $where
		   GROUP BY queryid, userid, dbid, toplevel) s});
}
my $p1_sums = stmt_sums($p1, 'pgsentinel_statements_archive', $stmt_upto);
is(stmt_sums($repo, 'pgsentinel_fleet_statements', $stmt_upto, "server = 'p1'"),
	$p1_sums, 'p1: the repository\'s statement deltas are the source\'s');
cmp_ok( $repo->safe_psql('postgres', qq{
		SELECT sum(calls) FROM pgsentinel_fleet_statements
		 WHERE server = 'p1' AND queryid = $stmt_qid AND query LIKE 'SELECT pg_sleep(\$1) /* fleet statement */%'}),
	'>', 0, 'p1: the statement\'s deltas in the repository, with its text');
my $stmt_window = "now() - interval '1 hour', '$stmt_upto'::timestamptz + interval '1 microsecond'";
is( $repo->safe_psql('postgres', qq{
		SELECT string_agg(DISTINCT calls || ' ' || round(ms_per_call::numeric, 3), ',')
		  FROM pgsentinel_fleet_top_statements($stmt_window, server => 'p1', top_n => 1000)
		 WHERE queryid = $stmt_qid}),
	$p1->safe_psql('postgres', qq{
		SELECT sum(calls) || ' ' || round((sum(exec_ms) / sum(calls))::numeric, 3)
		  FROM pgsentinel_statements_archive
		 WHERE queryid = $stmt_qid AND toplevel AND NOT reset
		   AND ash_time >= now() - interval '1 hour' AND ash_time <= '$stmt_upto'}),
	'fleet top statements: calls and ms per call as the source\'s archive has them');
is( $repo->safe_psql('postgres', qq{
		SELECT round(ms_per_call::numeric, 3)
		  FROM pgsentinel_top_statements($stmt_window, 1000, server => 'p1')
		 WHERE queryid = $stmt_qid}),
	$p1->safe_psql('postgres', qq{
		SELECT round((sum(exec_ms) / sum(calls))::numeric, 3)
		  FROM pgsentinel_statements_archive
		 WHERE queryid = $stmt_qid AND toplevel AND NOT reset
		   AND ash_time >= now() - interval '1 hour' AND ash_time <= '$stmt_upto'}),
	'p1: Top SQL on the repository (server => p1): ms per call from its statements history');

# The statements' tables copied again (left out of the publication and put
# back by pgsentinel_fleet_publish(), the subscription refreshed with
# copy_data): nothing doubled, and what was archived meanwhile comes too.
my $p1sub = $repo->safe_psql('postgres',
	"SELECT subscription FROM pgsentinel_fleet_status WHERE name = 'p1'");
$p1->safe_psql('postgres',
	'ALTER PUBLICATION pgsentinel_fleet DROP TABLE pgsentinel_archive_statement_batch, pgsentinel_archive_statement_text');
$repo->safe_psql('postgres', "ALTER SUBSCRIPTION $p1sub REFRESH PUBLICATION");
$p1->safe_psql('postgres', 'SELECT pgsentinel_fleet_publish(); SELECT pgsentinel_fleet_publish()');
is( $p1->safe_psql('postgres',
		"SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = 'pgsentinel_fleet' AND tablename LIKE '%statement%'"),
	'pgsentinel_archive_statement_batch,pgsentinel_archive_statement_text',
	'pgsentinel_fleet_publish() adds the statements\' tables to an existing publication');
$repo->safe_psql('postgres', "ALTER SUBSCRIPTION $p1sub REFRESH PUBLICATION WITH (copy_data = true)");
ok( $repo->poll_query_until('postgres', qq{
		SELECT count(*) = 6 AND bool_and(r.srsubstate = 'r')
		  FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid
		 WHERE s.subname = '$p1sub'}),
	'the statements\' tables copied again');
$stmt_newest = $p1->safe_psql('postgres', 'SELECT max(sample_id) FROM pg_stat_statements_history');
ok( $p1->poll_query_until('postgres',
		"SELECT statements_history_id = pgsentinel_history_id() AND statements_last_sample_id >= $stmt_newest FROM pgsentinel_archive_state"),
	'p1 archived the statements up to the newest reading, again');
my $stmt_upto2 = $p1->safe_psql('postgres', 'SELECT max(ash_time) FROM pgsentinel_archive_statement_delta');
ok( $repo->poll_query_until('postgres',
		"SELECT coalesce(max(ash_time) >= '$stmt_upto2', false) FROM pgsentinel_fleet_statements WHERE server = 'p1'"),
	'the repository has p1\'s statement deltas up to its newest, again');
is(stmt_sums($repo, 'pgsentinel_fleet_statements', $stmt_upto, "server = 'p1'"),
	$p1_sums, 'p1: copied again, the statement deltas are not doubled');
is(stmt_sums($repo, 'pgsentinel_fleet_statements', $stmt_upto2, "server = 'p1'"),
	stmt_sums($p1, 'pgsentinel_statements_archive', $stmt_upto2),
	'p1: and what it archived meanwhile is there');
is( $repo->safe_psql('postgres', q{
		SELECT (SELECT count(*) - count(DISTINCT (server_id, ash_time, queryid, dbid, userid, toplevel))
		          FROM pgsentinel_fleet_statement_delta)
		       + (SELECT count(*) - count(DISTINCT (server_id, feed, day, queryid, dbid, userid))
		          FROM pgsentinel_fleet_statement_text)
		       + (SELECT count(*) FROM pgsentinel_archive_statement_batch_fleet)
		       + (SELECT count(*) FROM pgsentinel_archive_statement_text_fleet)}),
	'0', 'no statement delta nor text twice; nothing left in the landing partitions');

# The standby's statements history is pulled from its ring, with the texts
# of its pg_stat_statements (the archive, its primary's, has none of a
# statement run on the standby only; a comment is no part of a query id).
$s1->safe_psql('postgres',
	join('', map { "SELECT pg_sleep(0.05), 1 /* fleet standby statement */;\n" } 1 .. 10));
my $s1_qid = $s1->safe_psql('postgres',
	"SELECT queryid FROM pg_stat_statements WHERE query LIKE 'SELECT pg_sleep(\$1), \$2 /* fleet standby statement */%'");
ok( $s1->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_statements_history WHERE queryid = $s1_qid AND calls = 10"),
	's1 read the statement\'s ten calls');
my $s1_stmt_upto = $s1->safe_psql('postgres',
	"SELECT max(ash_time) FROM pgsentinel_ring_statements WHERE queryid = $s1_qid");
my $s1_sums = stmt_sums($s1, 'pgsentinel_ring_statements', $s1_stmt_upto, "queryid = $s1_qid");
ok( $repo->poll_query_until('postgres',
		"SELECT coalesce(statements_pulled_until >= '$s1_stmt_upto', false) FROM pgsentinel_fleet_server WHERE name = 's1'"),
	'the repository pulled s1\'s statements up to the last reading of the statement');
is(stmt_sums($repo, 'pgsentinel_fleet_statements', $s1_stmt_upto, "server = 's1' AND queryid = $s1_qid"),
	$s1_sums, 's1: the pulled deltas of the statement are its ring\'s');
cmp_ok( $repo->safe_psql('postgres', qq{
		SELECT sum(calls) FROM pgsentinel_fleet_statements
		 WHERE server = 's1' AND queryid = $s1_qid AND query LIKE 'SELECT pg_sleep(\$1), \$2 /* fleet standby statement */%'}),
	'>', 0, 's1: the statement\'s deltas, with the text of its pg_stat_statements');
is( $repo->safe_psql('postgres', q{
		SELECT count(*) - count(DISTINCT (server_id, ash_time, queryid, dbid, userid, toplevel))
		  FROM pgsentinel_fleet_statement_delta}),
	'0', 'pulled again and again: no statement delta twice');

# The standby is promoted: the pull goes on.
my $promoted_at = $s1->safe_psql('postgres', 'SELECT now()');
$s1->promote;
ok($s1->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 's1 promoted');
my $after = newest_source($s1, 1);
wait_repo('s1', $after, 'pulled after the promotion');

# It switches to logical: what it archived as a standby's copy (the old
# primary's samples) is not taken as its own.
$repo->safe_psql('postgres', "SELECT pgsentinel_fleet_remove('s1')");
# A pull takes the statements ring's readings up to its newest, which can be
# past the newest sample it took (the rings are read one after the other):
# made so here, by forgetting the repository's last seconds of s1's samples.
# The switch to logical must not take those readings again from s1's archive.
my $s1_id = $repo->safe_psql('postgres', "SELECT server_id FROM pgsentinel_fleet_status WHERE name = 's1'");
$repo->safe_psql('postgres', qq{
	DELETE FROM pgsentinel_fleet_batch
	 WHERE server_id = $s1_id
	   AND first_time > (SELECT max(last_time) - interval '3 seconds'
	                       FROM pgsentinel_fleet_statement_batch WHERE server_id = $s1_id)});
my $pulled = $repo->safe_psql('postgres',
	"SELECT max(sample_time) FROM pgsentinel_fleet_sample_archive WHERE server = 's1'");
my $stmt_pulled = $repo->safe_psql('postgres',
	"SELECT max(last_time) FROM pgsentinel_fleet_statement_batch WHERE server_id = $s1_id");
my $before = sample_list($repo, 'pgsentinel_fleet_sample_archive', '-infinity', $pulled, "server = 's1'");
$repo->safe_psql('postgres',
	"SELECT pgsentinel_fleet_add('s1', \$\$" . $s1->connstr('postgres') . "\$\$, 'logical')");
ok( $s1->poll_query_until('postgres',
		"SELECT last_sample_time > '$pulled'::timestamptz + interval '1 second' FROM pgsentinel_archive_state"),
	's1 archives as a primary');
my $s1_upto = newest_source($s1);
wait_repo('s1', $s1_upto, 'logical after the switch');
is(sample_list($repo, 'pgsentinel_fleet_sample_archive', '-infinity', $pulled, "server = 's1'"),
	$before, 's1: nothing added before the switch (the copy of the old primary\'s archive is not s1\'s)');
is( $repo->safe_psql('postgres', qq{
		SELECT count(*) FROM pgsentinel_fleet_statement_delta d JOIN pgsentinel_fleet_status f USING (server_id)
		 WHERE f.name = 's1' AND d.feed <> 0 AND d.ash_time <= '$pulled'}),
	'0', 's1: no statement delta of the old primary\'s archive either');
is( sample_list($repo, 'pgsentinel_fleet_sample_archive', "$pulled", $s1_upto, "server = 's1' AND sample_time > '$pulled'"),
	sample_list($s1, 'pgsentinel_sample_archive', "$pulled", $s1_upto, "sample_time > '$pulled'"),
	's1: after the switch, the samples it archived');
is( $repo->safe_psql('postgres',
		'SELECT count(*) - count(DISTINCT (server_id, sample_time)) FROM pgsentinel_fleet_sample_archive'),
	'0', 'still no sample twice');
cmp_ok( $s1->safe_psql('postgres', qq{
		SELECT count(*) FROM pgsentinel_archive_statement_delta
		 WHERE ash_time > '$pulled' AND ash_time <= '$stmt_pulled'}),
	'>', 0, 's1 archived statement readings the pull had taken past its newest sample');
is( $repo->safe_psql('postgres', q{
		SELECT count(*) - count(DISTINCT (server_id, ash_time, queryid, dbid, userid, toplevel))
		  FROM pgsentinel_fleet_statement_delta}),
	'0', 'no statement reading twice either (a pull took readings past accept_after)');

# Removed with its history: the rows stay, the subscription and slot go.
my $p2sub = $repo->safe_psql('postgres',
	"SELECT subscription FROM pgsentinel_fleet_status WHERE name = 'p2'");
$repo->safe_psql('postgres', "SELECT pgsentinel_fleet_remove('p2')");
is($repo->safe_psql('postgres', "SELECT count(*) FROM pg_subscription WHERE subname = '$p2sub'"),
	'0', 'p2 removed: its subscription is dropped');
ok($p2->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_replication_slots"),
	'p2 removed: its slot is dropped on the source');
cmp_ok($repo->safe_psql('postgres', "SELECT count(*) FROM pgsentinel_fleet_sample_archive WHERE server = 'p2'"),
	'>', 0, 'p2 removed: its history is kept');

pgs_stop_bg($_) for @bg;
$s1_idle->query_safe('ROLLBACK');
$s1_idle->quit;
done_testing();
