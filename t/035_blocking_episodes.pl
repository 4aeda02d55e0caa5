
# A root blocker's trees more than a minute apart are separate episodes
# (pgsentinel_blocking_trees().episode): a transaction left idle holding a
# row lock, a waiter behind it, then, more than a minute after it gave up,
# another.  Two trees, each with its own times, the same from the minute
# rollups as from the rows, and the reports show two queues, not one
# queue of minutes.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('episodes',
	conf => "pgsentinel_ash.sampling_period = 0.1\n"
	  . "pgsentinel_archive.interval = 200ms\n"
	  . "pgsentinel_archive.keep_one_in = 1\n");
$node->safe_psql('postgres',
	'CREATE TABLE ep_t (id int PRIMARY KEY, v int); INSERT INTO ep_t VALUES (1, 0)');
my $t0 = pgs_server_time($node);

my $root = pgs_start_interactive($node,
	"BEGIN;\nUPDATE ep_t SET v = v + 1 WHERE id = 1;\n");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE 'UPDATE ep_t%'"),
	'root idle in transaction');
my ($root_pid, $root_xid) = split /\|/, $node->safe_psql('postgres',
	"SELECT pid, backend_xid FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE 'UPDATE ep_t%'");

# A waiter behind the root until sampled waiting, then cancelled.
sub one_wait
{
	my ($tag, $sql) = @_;
	$sql //= 'UPDATE ep_t SET v = v + 2 WHERE id = 1';
	my $w = pgs_start_bg($node, "$sql /* $tag */");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) >= 3 FROM pg_active_session_history
			  WHERE wait_event_type = 'Lock' AND query LIKE '%$tag */'"),
		"$tag: sampled waiting behind the root");
	$node->safe_psql('postgres',
		"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%$tag */' AND pid <> pg_backend_pid()");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"),
		"$tag: gave up");
	pgs_stop_bg($w);
	return $node->safe_psql('postgres',
		"SELECT max(ash_time) FROM pg_active_session_history WHERE query LIKE '%$tag */'");
}

my $end1 = one_wait('ep_first');
ok(pgs_wait_until_time($node, $end1, 65), 'more than a minute later');
one_wait('ep_second');
my $t1 = pgs_server_time($node);
my $window = "'$t0', '$t1'";

is( $node->safe_psql('postgres', qq{
		SELECT string_agg(concat_ws(':', episode, sessions, samples >= 3), ',' ORDER BY episode)
		  FROM pgsentinel_blocking_trees($window)
		 WHERE depth = 0 AND root_pid = $root_pid}),
	'1:1:t,2:1:t', 'two trees of the root, one session behind each');
is( $node->safe_psql('postgres', qq{
		SELECT (SELECT first_seen FROM pgsentinel_blocking_trees($window) WHERE depth = 0 AND episode = 2)
		     - (SELECT last_seen FROM pgsentinel_blocking_trees($window) WHERE depth = 0 AND episode = 1)
		     > interval '1 minute'}),
	't', 'each with its own times, more than a minute apart');
is( $node->safe_psql('postgres', qq{
		SELECT string_agg(episode || ':' || (query LIKE '%ep_first%'), ',' ORDER BY episode)
		  FROM pgsentinel_blocking_trees($window) WHERE depth = 1}),
	'1:true,2:false', 'the waiters under their own episode');
# what they waited for: the root's transaction (a row lock), in share
# mode, which the root held exclusively
is( $node->safe_psql('postgres', qq{
		SELECT string_agg(DISTINCT concat_ws('|', lock, lock_mode, blocker_lock_modes), ',')
		  FROM pgsentinel_blocking_trees($window) WHERE depth = 1}),
	"transaction $root_xid|ShareLock|ExclusiveLock",
	'the waiters name the lock, the mode they wanted and the mode held');

# the same from the archive's minute rollups as from its rows
ok( $node->poll_query_until('postgres',
		"SELECT rolled_until > '$t1'::timestamptz + interval '1 minute' FROM pgsentinel_archive_state"),
	'the minutes of the window rolled up');
my $trees = "SELECT string_agg(t::text, E'\\n' ORDER BY t::text) FROM pgsentinel_blocking_trees($window) t";
my $from_rollups = $node->safe_psql('postgres', $trees);
my $from_rows = $node->safe_psql('postgres',
	"SET pgsentinel_report.rollups = off; $trees");
is($from_rows, $from_rollups, 'the same trees from the minute rollups and from the rows');

# the reports: two queues
my $text = $node->safe_psql('postgres',
	"SELECT pgsentinel_report($window, 'text')");
my @roots = ($text =~ /root blocker pid $root_pid /g);
is(scalar(@roots), 2, 'the text report shows two queues behind the root');
like($text, qr/for ShareLock on transaction $root_xid behind $root_pid \(holding ExclusiveLock\)/,
	'the text report says what each waiter waited for and what the root held');
my $html = $node->safe_psql('postgres', "SELECT pgsentinel_report($window, 'html')");
ok($html =~ /ep_first/ && $html =~ /ep_second/, 'the HTML report draws both');

# DDL behind the same idle transaction: the relation named, the mode the
# DDL wants and the one the root's UPDATE holds
my $t2 = pgs_server_time($node);
one_wait('ep_ddl', 'ALTER TABLE ep_t ADD COLUMN x int');
my $t3 = pgs_server_time($node);
is( $node->safe_psql('postgres', qq{
		SELECT string_agg(DISTINCT concat_ws('|', lock, lock_mode, blocker_lock_modes), ',')
		  FROM pgsentinel_blocking_trees('$t2', '$t3') WHERE depth = 1}),
	'public.ep_t|AccessExclusiveLock|RowExclusiveLock',
	'DDL behind an idle transaction: the relation, the mode wanted, the mode held');
like( $node->safe_psql('postgres', "SELECT pgsentinel_report('$t2', '$t3', 'text')"),
	qr/for AccessExclusiveLock on public\.ep_t behind $root_pid \(holding RowExclusiveLock\)/,
	'and the text report says so');

pgs_stop_bg($root);
done_testing();
