
# The fleet on two repository nodes (docs/fleet.md, "When the repository
# outgrows one machine"): a server's partitions live on node B as foreign
# partitions of node A's fleet tables.  A primary feeds A by logical
# replication; its rows (samples and statements history) land on B, none
# on A; A's reports read them through postgres_fdw and equal the source's
# own.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $conf = "pgsentinel_archive.interval = 200ms\n"
  . "pgsentinel_archive.keep_one_in = 1\n"
  . "max_replication_slots = 10\nmax_logical_replication_workers = 10\n"
  . "max_worker_processes = 20\n";
my $src = pgs_node('src', conf => $conf . "max_wal_senders = 10\n",
	init_opts => { allows_streaming => 'logical' });
my $a = pgs_node('node_a', conf => $conf);
my $b = pgs_node('node_b', conf => $conf);
my $bg = pgs_start_bg($src, 'SELECT pg_sleep(600) /* sharded */');

# The steps of docs/fleet.md, for server id 1 on node B.
$b->safe_psql('postgres',
	"SELECT pgsentinel_fleet_partitions(1, current_date - 2, current_date + 7)");
$a->safe_psql('postgres', "CREATE SCHEMA fleet_ext; CREATE EXTENSION dblink SCHEMA fleet_ext; CREATE EXTENSION postgres_fdw;
	CREATE SERVER node_b FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '"
	  . $b->host . "', port '" . $b->port . "', dbname 'postgres');
	CREATE USER MAPPING FOR PUBLIC SERVER node_b;");
for my $t (
	qw(sample session activity text wait_event statement_delta statement_text
	rollup_minute rollup_minute_observed rollup_session_minute rollup_blocking_minute
	rollup_hour rollup_hour_observed rollup_session_hour rollup_blocking_hour))
{
	$a->safe_psql('postgres',
		"CREATE FOREIGN TABLE pgsentinel_fleet_${t}_1 PARTITION OF pgsentinel_fleet_$t
		   FOR VALUES IN (1) SERVER node_b OPTIONS (table_name 'pgsentinel_fleet_${t}_1')");
}
my ($ret, $out, $err) = $a->psql('postgres',
	"SELECT pgsentinel_fleet_add('b', \$\$" . $b->connstr('postgres') . "\$\$)");
like($err, qr/wal_level is "\w+" on fleet server "b": method logical needs "logical"/,
	'a source without wal_level = logical: clear error');
is( $a->safe_psql('postgres',
		"SELECT pgsentinel_fleet_add('src', \$\$" . $src->connstr('postgres') . "\$\$)"),
	'1', 'the source is server 1');

my $upto = $src->safe_psql('postgres', 'SELECT last_sample_time FROM pgsentinel_archive_state');
ok( $b->poll_query_until('postgres',
		"SELECT coalesce(max(sample_time) >= '$upto', false) FROM pgsentinel_fleet_sample_1"),
	'node B receives the source\'s samples');
my $from = $b->safe_psql('postgres', 'SELECT min(sample_time) FROM pgsentinel_fleet_sample_1');

sub sample_list
{
	my ($n, $rel) = @_;
	return $n->safe_psql('postgres', qq{
		SELECT count(*) || ' ' || md5(string_agg(extract(epoch FROM sample_time)::text
		                                        || ':' || sample_id, ',' ORDER BY sample_time))
		  FROM $rel WHERE sample_time >= '$from' AND sample_time <= '$upto'});
}
is(sample_list($b, 'pgsentinel_fleet_sample_1'), sample_list($src, 'pgsentinel_archive_sample'),
	'node B holds the source\'s samples, none lost, none doubled');
is(sample_list($a, 'pgsentinel_fleet_sample_archive'), sample_list($src, 'pgsentinel_archive_sample'),
	'node A reads them through its foreign partition');
is( $a->safe_psql('postgres', q{
		SELECT string_agg(relname || ':' || relkind::text, ',' ORDER BY relname) FROM pg_class
		 WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_1(_|$)' AND relkind IN ('r', 'p', 'f')}),
	join(',',
		map { "pgsentinel_fleet_${_}_1:f" }
		  qw(activity rollup_blocking_hour rollup_blocking_minute rollup_hour
		  rollup_hour_observed rollup_minute rollup_minute_observed rollup_session_hour
		  rollup_session_minute sample session statement_delta statement_text text
		  wait_event)),
	'node A stores nothing of server 1: its partitions are foreign');
my ($since, $until) = ($from, $upto);
is( $a->safe_psql('postgres',
		"SELECT round(aas::numeric, 9) FROM pgsentinel_fleet_aas('$since', '$until', server => 'src')"),
	$src->safe_psql('postgres', "SELECT round(aas::numeric, 9) FROM pgsentinel_aas('$since', '$until')"),
	'fleet AAS through node B = the source\'s own');
like( $a->safe_psql('postgres',
		"SELECT query FROM pgsentinel_fleet_top_statements('$since', '$until') WHERE query LIKE '%sharded%'"),
	qr/sharded/, 'texts and activities are read on node B too');


# Node A's tick rolls server 1 up, into its partitions on node B: the
# rollups hold the sums of the rows before rolled_until.
ok( $a->poll_query_until('postgres', qq{
		SELECT rolled_until >= date_trunc('minute', '$upto'::timestamptz)
		   AND rolled_until > '$from'
		  FROM pgsentinel_fleet_status WHERE name = 'src'}),
	'node A rolls server 1 up');
is( $b->safe_psql('postgres',
		'SELECT count(*) > 0 FROM pgsentinel_fleet_rollup_minute_observed_1'),
	't', 'its rollups are stored on node B');
# (one statement: one rolled_until for both sides, while A rolls on)
my ($rolled_sums, $row_sums) = split /\|/, $a->safe_psql('postgres', q{
		SELECT (SELECT round(sum(db_time)::numeric, 6) || ' ' || sum(rows)
		          FROM pgsentinel_fleet_rollup_minute WHERE server_id = 1 AND bucket < x.r)
		       || ' / ' ||
		       (SELECT round(sum(observed)::numeric, 6) || ' ' || sum(samples)
		          FROM pgsentinel_fleet_rollup_minute_observed WHERE server_id = 1 AND bucket < x.r)
		       || '|' ||
		       (SELECT round(sum(weight)::numeric, 6) || ' ' || count(*)
		          FROM pgsentinel_fleet_ash WHERE server_id = 1 AND ash_time < x.r AND weight > 0)
		       || ' / ' ||
		       (SELECT round(sum(weight)::numeric, 6) || ' ' || count(*)
		          FROM pgsentinel_fleet_sample WHERE server_id = 1 AND sample_time < x.r)
		  FROM (SELECT rolled_until AS r FROM pgsentinel_fleet_status WHERE name = 'src') x});
is($rolled_sums, $row_sums, 'the rollups of server 1 equal its rows');

# The statements history goes to node B as well.
$src->safe_psql('postgres',
	join('', map { "SELECT pg_sleep(0.05) /* sharded statement */;\n" } 1 .. 5));
my $stmt_newest = $src->safe_psql('postgres', 'SELECT max(sample_id) FROM pg_stat_statements_history');
ok( $src->poll_query_until('postgres',
		"SELECT statements_last_sample_id >= $stmt_newest FROM pgsentinel_archive_state"),
	'the source archived its statements');
my $stmt_upto = $src->safe_psql('postgres', 'SELECT max(ash_time) FROM pgsentinel_archive_statement_delta');
ok( $b->poll_query_until('postgres',
		"SELECT coalesce(max(ash_time) >= '$stmt_upto', false) FROM pgsentinel_fleet_statement_delta_1"),
	'node B receives the source\'s statement deltas');
is( $a->safe_psql('postgres', qq{
		SELECT sum(calls) FROM pgsentinel_fleet_statements
		 WHERE server = 'src' AND ash_time <= '$stmt_upto' AND query LIKE '%sharded statement%'
		HAVING sum(calls) > 0}),
	$src->safe_psql('postgres', qq{
		SELECT coalesce(sum(calls), -1) FROM pgsentinel_statements_archive
		 WHERE ash_time <= '$stmt_upto' AND query LIKE '%sharded statement%'}),
	'node A reads them, with their texts, through its foreign partitions');

pgs_stop_bg($bg);
done_testing();
