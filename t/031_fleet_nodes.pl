
# The fleet on several repository nodes (docs/fleet.md, "When the
# repository outgrows one machine"): the coordinator A places server 'p'
# (a primary, logical) on node B and server 'q' (the same primary, pulled)
# on node C by node => alone.  Their rows and rollups land on B and C,
# none on A; A's reports read them through postgres_fdw and equal the
# source's own; a roll done again after a lost commit does not double
# them.  A's tick makes the days ahead and drops the expired days on both
# nodes.  Node C not answering, then stopped: q's reports fail with an
# error naming it, p's and the fleet's status go on.  Removed without its history, p's
# partitions on B are dropped.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use PgsTest;

my $conf = "pgsentinel_archive.interval = 200ms\n"
  . "pgsentinel_archive.keep_one_in = 1\n"
  . "max_replication_slots = 10\nmax_logical_replication_workers = 10\n"
  . "max_worker_processes = 20\n";
my $src = pgs_node('src', conf => $conf . "max_wal_senders = 10\n",
	init_opts => { allows_streaming => 'logical' });
my $a = pgs_node('node_a', conf => $conf);
# (the nodes only store: they sample once a second)
my $b = pgs_node('node_b', conf => $conf . "pgsentinel_ash.sampling_period = 1\n");
my $c = pgs_node('node_c', conf => $conf . "pgsentinel_ash.sampling_period = 1\n");
my $bg = pgs_start_bg($src, 'SELECT pg_sleep(600) /* sharded */');

$a->safe_psql('postgres', "CREATE SCHEMA fleet_ext; CREATE EXTENSION dblink SCHEMA fleet_ext;
	CREATE EXTENSION postgres_fdw;");
for my $n ([$b, 'node_b'], [$c, 'node_c'])
{
	$a->safe_psql('postgres', "CREATE SERVER $n->[1] FOREIGN DATA WRAPPER postgres_fdw
		OPTIONS (host '" . $n->[0]->host . "', port '" . $n->[0]->port . "', dbname 'postgres',
		         connect_timeout '10');
		CREATE USER MAPPING FOR PUBLIC SERVER $n->[1];");
}

# wrong nodes: clear errors, nothing made
my ($ret, $out, $err) = $a->psql('postgres',
	"SELECT pgsentinel_fleet_add('p', \$\$" . $src->connstr('postgres') . "\$\$, node => 'node_x')");
like($err, qr/no postgres_fdw server "node_x" for the repository node.*\n.*HINT:  Create it first/,
	'an unknown node: clear error');
$a->safe_psql('postgres', "CREATE SERVER node_self FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '" . $a->host . "', port '" . $a->port . "', dbname 'postgres');
	CREATE USER MAPPING FOR PUBLIC SERVER node_self;");
($ret, $out, $err) = $a->psql('postgres',
	"SELECT pgsentinel_fleet_add('p', \$\$" . $src->connstr('postgres') . "\$\$, node => 'node_self')");
like($err, qr/the server of repository node "node_self" has no connect_timeout/,
	'a node without connect_timeout: clear error');
$a->safe_psql('postgres', "ALTER SERVER node_self OPTIONS (ADD connect_timeout '10')");
($ret, $out, $err) = $a->psql('postgres',
	"SELECT pgsentinel_fleet_add('p', \$\$" . $src->connstr('postgres') . "\$\$, node => 'node_self')");
like($err, qr/repository node "node_self" is this database/, 'the coordinator itself: clear error');
($ret, $out, $err) = $a->psql('postgres',
	"BEGIN; SELECT pgsentinel_fleet_add('p', \$\$" . $src->connstr('postgres') . "\$\$, node => 'node_b'); COMMIT;");
like($err, qr/pgsentinel_fleet_add\(node => \.\.\.\) cannot run inside a transaction block/,
	'no placement on a node in a transaction block (a rollback would leave its partitions there)');
($ret, $out, $err) = $a->psql('postgres',
	"DO \$d\$ BEGIN PERFORM pgsentinel_fleet_add('p', \$\$" . $src->connstr('postgres')
	  . "\$\$, node => 'node_b'); EXCEPTION WHEN division_by_zero THEN NULL; END \$d\$");
like($err, qr/pgsentinel_fleet_add\(node => \.\.\.\) cannot run inside a transaction block/,
	'no placement on a node in a subtransaction');
($ret, $out, $err) = $a->psql('postgres', '',
	extra_params => [ '-c', "SELECT pgsentinel_fleet_add('p', \$\$" . $src->connstr('postgres')
		  . "\$\$, node => 'node_b'); SELECT 1" ]);
like($err, qr/pgsentinel_fleet_add\(node => \.\.\.\) cannot run inside a transaction block/,
	'no placement on a node in an implicit transaction block');
is( $a->safe_psql('postgres', q{
		SELECT count(*) FROM pgsentinel_fleet_server}) . ' '
	  . $a->safe_psql('postgres', q{
		SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_[0-9]+$'}),
	'0 0', 'the refused calls made nothing');
# a node that holds partitions of the id the call would take: another
# repository's, refused, and the next call takes the next id
$c->safe_psql('postgres',
	"SELECT pgsentinel_fleet_partitions(1, current_date, current_date)");
($ret, $out, $err) = $a->psql('postgres',
	"SELECT pgsentinel_fleet_add('q', \$\$" . $src->connstr('postgres') . "\$\$, method => 'pull', node => 'node_c')");
like($err, qr/repository node "node_c" already holds partitions of fleet server id 1/,
	'a node holding partitions of the same id: refused');
is($c->safe_psql('postgres', "SELECT count(*) > 0 FROM pg_class WHERE relname = 'pgsentinel_fleet_batch_1'"),
	't', 'and what the node held is left alone');

is( $a->safe_psql('postgres',
		"SELECT pgsentinel_fleet_add('p', \$\$" . $src->connstr('postgres') . "\$\$, node => 'node_b')"),
	'2', 'p is placed on node B');
is( $a->safe_psql('postgres',
		"SELECT pgsentinel_fleet_add('q', \$\$" . $src->connstr('postgres') . "\$\$, method => 'pull', node => 'node_c')"),
	'3', 'q is placed on node C');

# Two repositories placing servers of one id on a node at once: the node
# checks that the id is free in the transaction that makes its partitions,
# under a lock of the id (here the other repository's placement is done
# already: the check before, in pgsentinel_fleet_add(), is passed by
# calling the placement alone).  What the node held stays.
my $id7 = "SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_7(_[0-9]+)?\$'";
$b->safe_psql('postgres', "SELECT pgsentinel_fleet_partitions(7, current_date, current_date)");
my $held7 = $b->safe_psql('postgres', $id7);
($ret, $out, $err) = $a->psql('postgres', "SELECT pgsentinel_fleet_node_place(7, 'node_b', current_date)");
like($err, qr/this repository node already holds partitions of fleet server id 7/,
	'an id taken on the node meanwhile: refused there');
is($b->safe_psql('postgres', $id7) . ' ' . $a->safe_psql('postgres', $id7), "$held7 0",
	'what the node held is left, nothing is made here');
# (each table in a transaction of its own: the node's archiver, measuring
# the schema's tables, may hold one while it waits for another)
for my $t (split /\n/, $b->safe_psql('postgres', q{
		SELECT c.relname FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
		  JOIN pg_class p ON p.oid = i.inhparent
		 WHERE c.relname ~ '^pgsentinel_fleet_[a-z_]+_7$' AND p.relname !~ '_7$'}))
{
	$b->safe_psql('postgres', qq{DROP TABLE "$t"});
}
# A placement that fails here after the node made its partitions drops them
# there again (a domain named as one of the foreign partitions fails it:
# no relation of that name, so the checks before pass).
my $id8 = "SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_8(_[0-9]+)?\$'";
$a->safe_psql('postgres', 'CREATE DOMAIN pgsentinel_fleet_wait_event_8 AS int');
($ret, $out, $err) = $a->psql('postgres', "SELECT pgsentinel_fleet_node_place(8, 'node_b', current_date)");
like($err, qr/type "pgsentinel_fleet_wait_event_8" already exists/,
	'a placement failing here after the node made its partitions: its error');
is($b->safe_psql('postgres', $id8) . ' ' . $a->safe_psql('postgres', $id8), '0 0',
	'and what it made on the node is dropped');
$a->safe_psql('postgres', 'DROP DOMAIN pgsentinel_fleet_wait_event_8');

my $upto = $src->safe_psql('postgres', 'SELECT last_sample_time FROM pgsentinel_archive_state');
ok( $b->poll_query_until('postgres',
		"SELECT coalesce(max(last_time) >= '$upto', false) FROM pgsentinel_fleet_batch_2"),
	'node B receives p\'s samples');
ok( $c->poll_query_until('postgres',
		"SELECT coalesce(max(last_time) >= '$upto', false) FROM pgsentinel_fleet_batch_3"),
	'node C receives q\'s samples');
my $from = $b->safe_psql('postgres', 'SELECT min(first_time) FROM pgsentinel_fleet_batch_2');

sub sample_list
{
	my ($n, $rel) = @_;
	return $n->safe_psql('postgres', qq{
		SELECT count(*) || ' ' || md5(string_agg(extract(epoch FROM sample_time)::text
		                                        || ':' || sample_id, ',' ORDER BY sample_time))
		  FROM $rel WHERE sample_time >= '$from' AND sample_time <= '$upto'});
}
# (node B has server 2's tables, not the server: its batches read as such)
is( sample_list($b, q{(SELECT pgsentinel_us_after(b.first_time, u.us) AS sample_time, u.sample_id
		              FROM pgsentinel_fleet_batch_2 b,
		                   pgsentinel_batch_samples(b.sample_data) a,
		                   unnest(a.sample_us, a.sample_ids) u(us, sample_id)) x}),
	sample_list($src, 'pgsentinel_sample_archive'),
	'node B holds the source\'s samples, none lost, none doubled');
is( sample_list($a, "(SELECT * FROM pgsentinel_fleet_sample_archive WHERE server = 'p') x"),
	sample_list($src, 'pgsentinel_sample_archive'),
	'node A reads them through its foreign partition');
my $tables = join(',',
	qw(batch rollup_blocking_hour rollup_blocking_minute_batch rollup_hour
	  rollup_hour_observed rollup_minute_batch rollup_minute_observed
	  rollup_session_hour rollup_session_minute_batch session statement_batch
	  statement_text text wait_event));
for my $id (2, 3)
{
	is( $a->safe_psql('postgres', qq{
			SELECT string_agg(regexp_replace(relname, '^pgsentinel_fleet_(.*)_$id\$', '\\1')
			                  || ':' || relkind::text, ',' ORDER BY relname) FROM pg_class
			 WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_$id(_|\$)' AND relkind IN ('r', 'p', 'f')}),
		join(',', map { "$_:f" } split /,/, $tables),
		"node A stores nothing of server $id: its 14 partitions are foreign");
}
is( $b->safe_psql('postgres', q{
		SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_2$' AND relkind = 'p'}),
	'13', 'node B holds p\'s partitions (13 by day or month, the wait events not)');

my ($since, $until) = ($from, $upto);
is( $a->safe_psql('postgres',
		"SELECT round(aas::numeric, 9) FROM pgsentinel_fleet_aas('$since', '$until', server => 'p')"),
	$src->safe_psql('postgres', "SELECT round(aas::numeric, 9) FROM pgsentinel_aas('$since', '$until')"),
	'fleet AAS through node B = the source\'s own');
like( $a->safe_psql('postgres',
		"SELECT query FROM pgsentinel_fleet_top_statements('$since', '$until', server => 'p') WHERE query LIKE '%sharded%'"),
	qr/sharded/, 'texts and activities are read on node B too');

# Node A's tick rolls both servers up, into their partitions on B and C:
# the rollups hold the sums of the rows before rolled_until (minutes) and
# hours_rolled_until (hours).  The sums of a server's rollups and of its
# rows as of its watermarks, "rollups|rows", in one statement (A rolls on
# meanwhile).
sub sums
{
	my ($id, $name) = @_;
	return split /\|/, $a->safe_psql('postgres', qq{
		SELECT (SELECT round(sum(db_time)::numeric, 6) || ' ' || sum(rows)
		          FROM pgsentinel_fleet_rollup_minute WHERE server_id = $id AND bucket < x.r)
		       || ' / ' ||
		       (SELECT round(sum(observed)::numeric, 6) || ' ' || sum(samples)
		          FROM pgsentinel_fleet_rollup_minute_observed WHERE server_id = $id AND bucket < x.r)
		       || ' / ' ||
		       coalesce((SELECT round(sum(db_time)::numeric, 6) || ' ' || sum(rows)
		                   FROM pgsentinel_fleet_rollup_hour WHERE server_id = $id AND bucket < x.h),
		                'none')
		       || '|' ||
		       (SELECT round(sum(weight)::numeric, 6) || ' ' || count(*)
		          FROM pgsentinel_fleet_ash WHERE server_id = $id AND ash_time < x.r AND weight > 0)
		       || ' / ' ||
		       (SELECT round(sum(weight)::numeric, 6) || ' ' || count(*)
		          FROM pgsentinel_fleet_sample_archive WHERE server_id = $id AND sample_time < x.r)
		       || ' / ' ||
		       coalesce((SELECT round(sum(weight)::numeric, 6) || ' ' || count(*)
		                   FROM pgsentinel_fleet_ash WHERE server_id = $id AND ash_time < x.h AND weight > 0
		                 HAVING count(*) > 0), 'none')
		  FROM (SELECT rolled_until AS r, hours_rolled_until AS h
		          FROM pgsentinel_fleet_server WHERE name = '$name') x});
}

for my $n (['p', 2, $b], ['q', 3, $c])
{
	my ($name, $id, $node) = @$n;
	ok( $a->poll_query_until('postgres', qq{
			SELECT rolled_until >= date_trunc('minute', '$upto'::timestamptz)
			   AND rolled_until > '$from'
			  FROM pgsentinel_fleet_status WHERE name = '$name'}),
		"node A rolls $name up");
	is( $node->safe_psql('postgres',
			"SELECT count(*) > 0 FROM pgsentinel_fleet_rollup_minute_observed_$id"),
		't', "its rollups are stored on its node");
	my ($rolled, $rows) = sums($id, $name);
	is($rolled, $rows, "the rollups of $name equal its rows");

	# A crash after the node committed a roll's rollups and before A
	# committed its watermark: that roll is done again (here: the
	# watermarks set back over the last minute and its hour), and replaces
	# the node's rows of that range (the observed tables' keys would refuse
	# them twice; the others would sum them twice).
	my $back = $a->safe_psql('postgres', qq{
		UPDATE pgsentinel_fleet_server
		   SET rolled_until = date_trunc('minute', rolled_until) - interval '1 minute',
		       hours_rolled_until = least(hours_rolled_until,
		                                  date_trunc('hour', date_trunc('minute', rolled_until) - interval '1 minute'))
		 WHERE name = '$name' RETURNING rolled_until});
	ok( $a->poll_query_until('postgres', qq{
			SELECT rolled_until > '$back' AND last_error IS NULL
			  FROM pgsentinel_fleet_server WHERE name = '$name'}),
		"a roll of $name done again succeeds");
	($rolled, $rows) = sums($id, $name);
	is($rolled, $rows, "the rollups of $name, rolled again, are not doubled");
}

# The statements history goes to node B as well.
$src->safe_psql('postgres',
	join('', map { "SELECT pg_sleep(0.05) /* sharded statement */;\n" } 1 .. 5));
my $stmt_newest = $src->safe_psql('postgres', 'SELECT max(sample_id) FROM pg_stat_statements_history');
ok( $src->poll_query_until('postgres',
		"SELECT statements_last_sample_id >= $stmt_newest FROM pgsentinel_archive_state"),
	'the source archived its statements');
my $stmt_upto = $src->safe_psql('postgres', 'SELECT max(ash_time) FROM pgsentinel_archive_statement_delta');
ok( $b->poll_query_until('postgres',
		"SELECT coalesce(max(last_time) >= '$stmt_upto', false) FROM pgsentinel_fleet_statement_batch_2"),
	'node B receives the source\'s statement deltas');
is( $a->safe_psql('postgres', qq{
		SELECT sum(calls) FROM pgsentinel_fleet_statements
		 WHERE server = 'p' AND ash_time <= '$stmt_upto' AND query LIKE '%sharded statement%'
		HAVING sum(calls) > 0}),
	$src->safe_psql('postgres', qq{
		SELECT coalesce(sum(calls), -1) FROM pgsentinel_statements_archive
		 WHERE ash_time <= '$stmt_upto' AND query LIKE '%sharded statement%'}),
	'node A reads them, with their texts, through its foreign partitions');

# The tick keeps the days on both nodes: a day past retention (made there
# by hand) is dropped, the last day ahead (dropped by hand) made again.
my $ahead = $a->safe_psql('postgres', q{SELECT to_char(timezone('UTC', now())::date + 7, 'YYYYMMDD')});
my $old = $a->safe_psql('postgres', q{SELECT to_char(timezone('UTC', now())::date - 40, 'YYYYMMDD')});
for my $n ([$b, 2], [$c, 3])
{
	my ($node, $id) = @$n;
	$node->safe_psql('postgres', qq{
		SELECT pgsentinel_fleet_partitions($id, to_date('$old', 'YYYYMMDD'), to_date('$old', 'YYYYMMDD'))});
	# (each day's table in a transaction of its own: A's pulls and rolls,
	# writing to the server's tables there, lock one parent after another,
	# and a drop holding the parents of those it dropped would deadlock)
	for my $t (split /\n/, $node->safe_psql('postgres', qq{
			SELECT relname FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_${id}_$ahead\$'}))
	{
		$node->safe_psql('postgres', qq{DROP TABLE "$t"});
	}
	is( $node->safe_psql('postgres', qq{
			SELECT count(*) FILTER (WHERE relname ~ '_${id}_$old\$') || ' '
			       || count(*) FILTER (WHERE relname ~ '_${id}_$ahead\$')
			  FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_${id}_[0-9]{8}\$'}),
		'9 0', "node of server $id: an expired day made, the last day ahead dropped");
}
# (a day being written to through its server's parent when the node is
# kept is left for the next pass, ten minutes later: here each pass is made
# due again until the days are right)
for my $n ([$b, 2], [$c, 3])
{
	my ($node, $id) = @$n;
	my ($days, $deadline) = ('', time() + $PostgreSQL::Test::Utils::timeout_default);
	while (time() < $deadline)
	{
		$a->safe_psql('postgres', 'UPDATE pgsentinel_fleet_server SET node_due = NULL');
		$days = $node->safe_psql('postgres', qq{
			SELECT count(*) FILTER (WHERE relname ~ '_${id}_$old\$') || ' '
			       || count(*) FILTER (WHERE relname ~ '_${id}_$ahead\$')
			  FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_${id}_[0-9]{8}\$'});
		last if $days eq '0 9';
		sleep 1;
	}
	is($days, '0 9', "node of server $id: the tick dropped the expired day and made the day ahead");
}
ok( $a->poll_query_until('postgres', q{
		SELECT count(*) = 2 FROM pgsentinel_fleet_server
		 WHERE node_due > now() AND node_due <= now() + interval '10 minutes' AND last_error IS NULL}),
	'both nodes are kept again ten minutes later');

# No node is begun once the budget has passed, the first always is: with
# both nodes due and no budget, node B is kept and node C stays due for the
# next tick.  (In one transaction: the archiver's tick, which keeps the
# nodes too, waits for its rows.)
is( $a->safe_psql('postgres', q{
		BEGIN;
		UPDATE pgsentinel_fleet_server SET node_due = NULL WHERE node IS NOT NULL;
		SELECT pgsentinel_fleet_node_keep(budget => '0 s');
		SELECT string_agg(DISTINCT node || CASE WHEN node_due IS NULL THEN ' due' ELSE ' kept' END, ', ')
		  FROM pgsentinel_fleet_server WHERE node IS NOT NULL;
		COMMIT;}),
	"1\nnode_b kept, node_c due", 'node keeping: none begun past its budget');

# Node C unreachable without a refusal (a socket that accepts and never
# answers, as a host gone behind a firewall): q's report fails once node
# C's connect_timeout has passed, naming it; p's goes on.
# (a statement of p's with its text, for the text lookup below)
my $p_queryid = $a->safe_psql('postgres', qq{
	SELECT a.queryid FROM pgsentinel_fleet_activity_archive a
	 WHERE a.server_id = pgsentinel_fleet_server_id('p')
	   AND a.queryid IS NOT NULL AND a.top_level_query IS NOT NULL
	   AND a.batch_start >= date_trunc('day', '$since'::timestamptz, 'UTC')
	   AND a.batch_start < '$until' AND (a.query_start IS NULL OR a.query_start < '$until')
	 LIMIT 1});
like($p_queryid, qr/^-?[0-9]+$/, 'a statement of p with its text');
my $blackhole = IO::Socket::INET->new(
	Listen => 64, LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp')
  or die "no listening socket: $!";
$a->safe_psql('postgres', "ALTER SERVER node_c OPTIONS (SET host '127.0.0.1', SET port '"
	  . $blackhole->sockport . "', SET connect_timeout '2')");
($ret, $out, $err) = $a->psql('postgres',
	"SELECT length(pgsentinel_report('$since', '$until', server => 'q'))",
	timeout => $PostgreSQL::Test::Utils::timeout_default);
like($err, qr/could not connect to server "node_c"/,
	'node C not answering: q\'s report fails after the timeout and names node C');
like($a->safe_psql('postgres', "SELECT length(pgsentinel_report('$since', '$until', server => 'p'))"),
	qr/^[1-9][0-9]+$/, 'p\'s report is read on node B meanwhile');
# the text lookup a report falls back on reads p's node only (its joins are
# pruned by server when planned: no connection to node C is opened)
is( $a->safe_psql('postgres', qq{
		SELECT pgsentinel_fleet_statement_text('p', $p_queryid, '$since', '$until', NULL, NULL, NULL) IS NOT NULL}),
	't', 'p\'s statement text is read on node B meanwhile');
$a->safe_psql('postgres', "ALTER SERVER node_c OPTIONS (SET host '" . $c->host
	  . "', SET port '" . $c->port . "', SET connect_timeout '10')");
close($blackhole);

# Node C stops: q's reports fail with an error that names it; p's, the
# fleet status and the tick go on.
$c->stop('immediate');
($ret, $out, $err) = $a->psql('postgres',
	"SELECT length(pgsentinel_report('$since', '$until', server => 'q'))");
like($err, qr/could not connect to server "node_c"/, 'node C down: q\'s report fails and names node C');
($ret, $out, $err) = $a->psql('postgres',
	"SELECT count(*) FROM pgsentinel_top('$since', '$until', 'statement', server => 'q')");
like($err, qr/could not connect to server "node_c"/, 'and so does q\'s top');
like($a->safe_psql('postgres', "SELECT length(pgsentinel_report('$since', '$until', server => 'p'))"),
	qr/^[1-9][0-9]+$/, 'p\'s report is read on node B');
is( $a->safe_psql('postgres', qq{
		SELECT round(aas::numeric, 9) FROM pgsentinel_fleet_aas('$since', '$until', server => 'p')}),
	$src->safe_psql('postgres', "SELECT round(aas::numeric, 9) FROM pgsentinel_aas('$since', '$until')"),
	'p\'s AAS is unchanged');
like( $a->safe_psql('postgres',
		"SELECT query FROM pgsentinel_fleet_top_statements('$since', '$until', server => 'p') WHERE query LIKE '%sharded%'"),
	qr/sharded/, 'p\'s top statements too');
is( $a->safe_psql('postgres', q{
		SELECT string_agg(name || ':' || (last_sample_time IS NOT NULL), ',' ORDER BY name)
		  FROM pgsentinel_fleet_status}),
	'p:true,q:false', 'the fleet status shows both servers, q with no newest sample');
my $rolled = $a->safe_psql('postgres', "SELECT rolled_until FROM pgsentinel_fleet_status WHERE name = 'p'");
ok( $a->poll_query_until('postgres', qq{
		SELECT rolled_until > '$rolled' FROM pgsentinel_fleet_status WHERE name = 'p'}),
	'the tick goes on rolling p up');
ok( $a->poll_query_until('postgres', q{
		SELECT last_error ~ 'node_c' FROM pgsentinel_fleet_status WHERE name = 'q'}),
	'q\'s pull fails and says why');

# Removed without its history, p's partitions on node B are dropped; not
# in a transaction block, whose rollback would not bring them back.
pgs_stop_bg($bg);
($ret, $out, $err) = $a->psql('postgres',
	"BEGIN; SELECT pgsentinel_fleet_remove('p', keep_history => false); COMMIT;");
like($err, qr/cannot run inside a transaction block/, 'no removal from a node in a transaction block');
($ret, $out, $err) = $a->psql('postgres', '',
	extra_params => [ '-c', "SELECT pgsentinel_fleet_remove('p', keep_history => false); SELECT 1" ]);
like($err, qr/cannot run inside a transaction block/, 'no removal from a node in an implicit transaction block');
($ret, $out, $err) = $a->psql('postgres',
	"DO \$d\$ BEGIN PERFORM pgsentinel_fleet_remove('p', keep_history => false); EXCEPTION WHEN division_by_zero THEN NULL; END \$d\$");
like($err, qr/cannot run inside a transaction block/, 'no removal from a node in a subtransaction');
$a->safe_psql('postgres', "SELECT pgsentinel_fleet_remove('p', keep_history => false)");
is( $b->safe_psql('postgres', q{
		SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_2(_|$)'}) . ' '
	  . $a->safe_psql('postgres', q{
		SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_2(_|$)'}),
	'0 0', 'p removed: its partitions are gone from node B and A');

# q removed without its history while node C is down: the repository
# forgets q at once, keeps the drop of its partitions on node C to do, and
# the archiver does it once C is back.
my $q_tables = "SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[a-z_]+_3(_|\$)'";
($ret, $out, $err) = $a->psql('postgres', "SELECT pgsentinel_fleet_remove('q', keep_history => false)");
like($err, qr/the partitions of fleet server "q" are left on repository node "node_c"/,
	'q removed while node C is down: a warning');
is( $a->safe_psql('postgres', "SELECT count(*) FROM pgsentinel_fleet_server WHERE name = 'q'") . ' '
	  . $a->safe_psql('postgres', $q_tables) . ' '
	  . $a->safe_psql('postgres', "SELECT string_agg(node || ':' || server_id, ',') FROM pgsentinel_fleet_pending_drop"),
	'0 0 node_c:3', 'q is gone here, the drop on node C is kept to do');
# The drop is due at once: the archiver's next pass tries it.  Node C comes
# back only after that try failed and put the drop off ten minutes, else a
# pass coming after the start (a busy machine) drops q's partitions there
# before they are counted.
ok( $a->poll_query_until('postgres', q{
		SELECT due > now() FROM pgsentinel_fleet_pending_drop
		 WHERE node = 'node_c' AND server_id = 3}),
	'the archiver tries the drop on node C, down, and puts it off')
  or diag('the drops owed: '
	  . $a->safe_psql('postgres', q{
		SELECT string_agg(node || ':' || server_id || ' due ' || (due - now())::text
		                  || ' from now, error: ' || coalesce(last_error, 'none'), '; ')
		  FROM pgsentinel_fleet_pending_drop})
	  . '; the archiver: '
	  . $a->safe_psql('postgres', q{
		SELECT string_agg(coalesce(state, '') || ' ' || coalesce(wait_event, '') || ' '
		                  || (now() - query_start)::text || ' ' || left(query, 200), '; ')
		  FROM pg_stat_activity WHERE backend_type = 'pgsentinel archiver'}));
$c->start;
ok($c->safe_psql('postgres', $q_tables) > 0, 'node C back, with q\'s partitions');
$a->safe_psql('postgres', 'UPDATE pgsentinel_fleet_pending_drop SET due = now()');
ok( $a->poll_query_until('postgres', 'SELECT NOT EXISTS (SELECT FROM pgsentinel_fleet_pending_drop)'),
	'the archiver does the drop once node C is back');
is($c->safe_psql('postgres', $q_tables), '0', 'q\'s partitions are gone from node C');

done_testing();
