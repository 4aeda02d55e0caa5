
# pgsentinel in a schema whose name must be quoted ("Ash Data"): its schema
# is fixed at creation and written into its functions (@extschema@), so the
# archiver, the reports and the fleet's checks work there as in public,
# ALTER EXTENSION SET SCHEMA is refused, and an update from the relocatable
# 2.0.0 keeps the schema the extension is in.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('schema', create => 0, conf => q{
pgsentinel_archive.interval = 200ms
pgsentinel_archive.keep_one_in = 1
});
my $s = '"Ash Data"';
$node->safe_psql('postgres',
	qq{CREATE EXTENSION pg_stat_statements; CREATE SCHEMA $s;
	   CREATE EXTENSION pgsentinel SCHEMA $s});

# The archiver steps into that schema, and what it archived reads back.
sub archived_after
{
	my ($id) = @_;
	return $node->poll_query_until('postgres',
		qq{SELECT coalesce(last_sample_id, 0) > $id FROM $s.pgsentinel_archive_state});
}
my $bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* quoted-schema */');
ok( $node->poll_query_until('postgres',
		qq{SELECT count(*) > 0 FROM $s.pg_active_session_history
		    WHERE query LIKE '%quoted-schema%' AND wait_event = 'PgSleep'}),
	'a session sampled');
my $now = $node->safe_psql('postgres',
	qq{SELECT max(sample_id) FROM $s.pg_active_session_history});
ok(archived_after($now), 'the archiver archives into "Ash Data"');
is( $node->safe_psql('postgres',
		qq{SELECT count(*) > 0 FROM $s.pgsentinel_ash_archive
		    WHERE query LIKE '%quoted-schema%'}),
	't', 'the archived rows read back');

# The reports, whatever the caller's search_path.
like(
	$node->safe_psql('postgres',
		qq{SET search_path = pg_catalog;
		   SELECT $s.pgsentinel_report(now() - interval '5 minutes', now(), 'html')}),
	qr/<h2>Top SQL<\/h2>.*quoted-schema/s,
	'the HTML report names the statement');
is( $node->safe_psql('postgres',
		qq{SET search_path = pg_catalog;
		   SELECT count(*) = 0 FROM $s.pgsentinel_ambiguous_routines}),
	't', 'no routine makes its calls ambiguous');

# Fixed where it was created.
my ($rc, $out, $err) = $node->psql('postgres',
	qq{CREATE SCHEMA elsewhere; ALTER EXTENSION pgsentinel SET SCHEMA elsewhere});
like($err, qr/does not support SET SCHEMA/, 'ALTER EXTENSION SET SCHEMA is refused');

# An update from the relocatable 2.0.0 keeps the schema, and archiving
# goes on there.
$node->safe_psql('postgres',
	qq{DROP EXTENSION pgsentinel;
	   CREATE EXTENSION pgsentinel VERSION '2.0.0' SCHEMA $s;
	   ALTER EXTENSION pgsentinel UPDATE});
is( $node->safe_psql('postgres',
		q{SELECT e.extversion || ' ' || n.nspname || ' ' || e.extrelocatable
		    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		   WHERE e.extname = 'pgsentinel'}),
	'2.1.0 Ash Data false', 'updated from 2.0.0 in its schema, no longer relocatable');
$now = $node->safe_psql('postgres',
	qq{SELECT max(sample_id) FROM $s.pg_active_session_history});
ok(archived_after($now), 'the archiver archives into "Ash Data" after the update');
like(
	$node->safe_psql('postgres',
		qq{SET search_path = pg_catalog;
		   SELECT $s.pgsentinel_report(now() - interval '5 minutes', now())}),
	qr/quoted-schema/, 'the text report reads it');

pgs_stop_bg($bg);
$node->stop;
done_testing();
