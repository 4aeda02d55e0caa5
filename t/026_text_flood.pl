
# One role flooding unique query texts laps the text area quickly; the
# texts of other roles' rows that are not archived yet must still reach the
# archive.  The sampler wakes the archiver whenever a quarter of the area
# has been written since its last step.  The archiver's own timer is an
# hour here: during the flood only that wake archives.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('flood', conf => q{
pgsentinel_ash.text_area_size = 64
pgsentinel_archive.interval = '1h'
pgsentinel_archive.keep_one_in = 1
});
$node->safe_psql('postgres', 'CREATE ROLE regress_bob LOGIN; CREATE ROLE regress_mallory LOGIN');
ok( $node->poll_query_until('postgres',
		"SELECT archive_state = 'ok' FROM pgsentinel_status()"),
	'the archiver has made its first step');

# bob runs ten statements, each sampled
for my $i (1 .. 10)
{
	$node->safe_psql('postgres', "SELECT pg_sleep(0.5) /* bob-statement-$i */",
		extra_params => [ '-U', 'regress_bob' ]);
}
is( $node->safe_psql('postgres', q{
		SELECT count(DISTINCT query) FROM pg_active_session_history
		 WHERE usename = 'regress_bob' AND query LIKE '%bob-statement-%'}),
	'10', "bob's ten statements are in the ring with their texts");

# mallory: a new 1 kB text every 100 ms, until bob's texts are overwritten
my $script = $node->basedir . '/flood.sql';
append_to_file($script,
	"\\set r random(1, 1000000000)\nSELECT pg_sleep(0.1), :r, '"
	  . ('x' x 1000) . "' /* mallory-flood */;\n");
my $flood = pgs_pgbench_bg($node, '-n', '-c', '1', '-T', '600', '-U',
	'regress_mallory', '-f', $script, 'postgres');
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) > 0 AND count(query) = 0 FROM pg_active_session_history
		 WHERE usename = 'regress_bob'}),
	"the flood has overwritten bob's texts in the area");
cmp_ok(pgs_status($node, 'texts_dropped'), '>', 0, 'texts were dropped');
pgs_stop_bg($flood);

# archive what the ring holds now (a reload wakes the archiver)
my $newest = $node->safe_psql('postgres', 'SELECT max(sample_id) FROM pgsentinel_samples()');
$node->reload;
ok( $node->poll_query_until('postgres',
		"SELECT last_sample_id >= $newest FROM pgsentinel_archive_state"),
	'archived up to the newest sample')
  or diag('archive state and archiver status: '
	  . $node->safe_psql('postgres', 'SELECT * FROM pgsentinel_archive_state')
	  . ' / ' . $node->safe_psql('postgres', q{
		SELECT archive_state, archive_message, archive_last_time, archive_lag_seconds, diagnosis
		  FROM pgsentinel_status()}));
is( $node->safe_psql('postgres', q{
		SELECT count(*) > 0, count(*) = count(query),
		       count(DISTINCT query) FILTER (WHERE query LIKE '%bob-statement-%')
		  FROM pgsentinel_ash_archive WHERE usename = 'regress_bob'}),
	't|t|10', "every archived row of bob's has its text");

$node->stop('fast');
done_testing();
