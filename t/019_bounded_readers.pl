# Readers' memory does not grow with the ring (DESIGN invariant 14): a
# query on the history reads the ring a chunk at a time and the texts one
# at a time (src/store/ring.c, src/store/text_area.c), where it used to copy every row
# written, and the text area, into the backend -- up to 8.8 GB per query.
#
#  - a ring holding 500000 rows (about 90 MB; a copy of it is what each
#    reader took): while a reader that has just read all of it waits (on an
#    advisory lock taken after its scan, inside the same query), its
#    private memory (RssAnon: the shared ring it read counts in RssShmem)
#    stays under 40 MB, for count(*), for a filter on texts with a GROUP BY,
#    and for the set-returning function that 1.4's declarations read;
#  - a scan that the sampler laps (the reader is held in the middle of its
#    scan while the ring is overwritten twice) skips the overwritten rows,
#    reads no row newer than the query's bounds, and says so in a NOTICE;
#  - the history saved at a clean shutdown starts at the last
#    pgsentinel_reset(), as readers see it.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $cap = 1000000;
my $fill = 500000;
my $limit_kb = 40 * 1024;

my $node = pgs_node('bounded',
	conf => "max_connections = 300\npgsentinel_ash.max_entries = $cap\n");
my $sleepers = pgs_start_sleepers($node, 250, 900, 'sleepers');
ok( $node->poll_query_until('postgres',
		"SELECT ash_rows >= $fill FROM pgsentinel_status()", 't'),
	"ring holds $fill rows");
my $row_bytes = pgs_status($node, 'ash_row_bytes');
my $copy_kb = int($fill * $row_bytes / 1024);
note "a copy of $fill rows takes $copy_kb kB";
cmp_ok($copy_kb, '>', 2 * $limit_kb,
	'a copy of the rows would exceed the limit twice over');

# The holder of advisory lock 42: readers wait for it after their scan.
my $holder = $node->background_psql('postgres');
$holder->query_safe('SELECT pg_advisory_lock(42)');

# Run $sql (its scan, then pg_advisory_lock(42)) in the background; once it
# waits for the lock, return its RssAnon (kB), then let it finish.
sub reader_anon_kb
{
	my ($name, $sql) = @_;
	my $bg = pgs_start_bg($node, "$sql /* $name */");
	my $waiting = "SELECT pid FROM pg_stat_activity WHERE query LIKE '%/* $name */%' AND wait_event = 'advisory' AND pid <> pg_backend_pid()";
	$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($waiting) w")
	  or diag "reader $name not seen waiting";
	my $pid = $node->safe_psql('postgres', $waiting);
	my $r = pgs_rss_kb($pid);
	$holder->query_safe('SELECT pg_advisory_unlock(42)');
	is(pgs_stop_bg($bg, wait => 1), 0, "$name: reader ran without error")
	  or diag $bg->{err};
	$holder->query_safe('SELECT pg_advisory_lock(42)');
	note "$name: RssAnon $r->{RssAnon} kB, RssShmem $r->{RssShmem} kB: $bg->{out}";
	my ($rows) = $bg->{out} =~ /^(\d+)/;
	return ($r->{RssAnon} // 1e9, $rows // 0);
}

my ($kb, $out) = reader_anon_kb('count',
	'SELECT count(*), pg_advisory_lock(42) FROM pg_active_session_history');
cmp_ok($out, '>=', $fill, "count(*) read the $fill rows ($out)");
cmp_ok($kb, '<', $limit_kb, "count(*): RssAnon $kb kB < $limit_kb kB");

($kb, $out) = reader_anon_kb('filter', q{
SELECT sum(n), pg_advisory_lock(42) FROM (
  SELECT wait_event, count(*) AS n FROM pg_active_session_history
  WHERE query LIKE '%sleepers%' AND application_name IS NOT NULL
  GROUP BY 1) s});
cmp_ok($out, '>=', $fill, "filter on texts read the $fill rows ($out)");
cmp_ok($kb, '<', $limit_kb, "filter and GROUP BY: RssAnon $kb kB < $limit_kb kB");

($kb, $out) = reader_anon_kb('function', q{
SELECT count(*) FILTER (WHERE query LIKE '%sleepers%'), pg_advisory_lock(42)
FROM pg_active_session_history()});
cmp_ok($out, '>=', $fill, "the function read the $fill rows ($out)");
cmp_ok($kb, '<', $limit_kb,
	"the function (tuplestore spilled beyond work_mem): RssAnon $kb kB < $limit_kb kB");

$holder->query_safe('SELECT pg_advisory_unlock(42)');
$node->safe_psql('postgres',
	"SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE query LIKE '%sleepers%' AND pid <> pg_backend_pid()");
pgs_stop_bg($sleepers, wait => 1);
$node->stop;

# --- a scan lapped by the sampler ---------------------------------------------

# A ring of 2000 rows and 20 sleeping sessions.  The reader fetches the
# first chunk of its rows, then waits for the advisory lock in its filter
# while the sampler overwrites the ring twice; the rest of its rows are
# gone when it resumes.
$cap = 2000;
$node = pgs_node('lapped',
	conf => "max_connections = 60\npgsentinel_ash.max_entries = $cap\n");
$sleepers = pgs_start_sleepers($node, 20, 900, 'sleepers');
ok( $node->poll_query_until('postgres',
		"SELECT ash_rows = $cap FROM pgsentinel_status()"),
	"ring of $cap rows full");
$holder = $node->background_psql('postgres');
$holder->query_safe('SELECT pg_advisory_lock(42)');
my $bg = pgs_start_bg($node, q{
SELECT count(*) AS n, max(sample_id) AS newest
FROM pg_active_session_history
WHERE pg_advisory_lock_shared(42)::text = '' /* lapped reader */});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%lapped reader%' AND wait_event = 'advisory' AND pid <> pg_backend_pid()"),
	'the reader waits in the middle of its scan');
# (its bounds were fixed before this)
my $max_before = $node->safe_psql('postgres',
	'SELECT max(sample_id) FROM pg_active_session_history');
my $written = pgs_status($node, 'ash_rows_written');
ok( $node->poll_query_until('postgres',
		"SELECT ash_rows_written >= $written + 2 * $cap FROM pgsentinel_status()"),
	'the sampler overwrote the ring twice');
$holder->query_safe('SELECT pg_advisory_unlock(42)');
is(pgs_stop_bg($bg, wait => 1), 0, 'the lapped reader ended without error')
  or diag $bg->{err};
my ($n, $newest) = split /\|/, $bg->{out};
note "lapped reader: $n rows, newest sample $newest (newest before: $max_before): $bg->{err}";
cmp_ok($n, '<', $cap, "it skipped the overwritten rows ($n of $cap read)");
cmp_ok($newest, '<=', $max_before,
	'and read no row newer than its bounds');
like($bg->{err},
	qr/NOTICE:  \d+ rows of the active session history were overwritten before this query read them/,
	'a NOTICE says how many rows it skipped');

$holder->quit;

# --- the history saved at shutdown starts at the last reset -------------------

my $last = $node->safe_psql('postgres',
	'SELECT max(sample_id) FROM pg_active_session_history');
$node->safe_psql('postgres', 'SELECT pgsentinel_reset()');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_active_session_history WHERE sample_id > $last"),
	'new rows after the reset');
$node->safe_psql('postgres',
	"SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE query LIKE '%sleepers%' AND pid <> pg_backend_pid()");
pgs_stop_bg($sleepers, wait => 1);
$node->restart;
is( $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE sample_id <= $last) || ' ' || (count(*) > 0)::text FROM pg_active_session_history"),
	'0 true',
	'after a restart: the rows since the reset, none from before it');
$node->stop;

done_testing();
