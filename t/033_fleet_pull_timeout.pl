# A fleet source that stops answering in the middle of a pull (here: a
# session there holds the view the pull reads locked) fails its own pull
# after pgsentinel_archive.fleet_pull_timeout, with the timeout as its
# last_error, named by pgsentinel_status(); the repository's other server
# is pulled all the same and its own archive goes on.  Once the source
# answers again it is pulled again and the error is gone.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $conf = "pgsentinel_archive.interval = 200ms\n"
  . "pgsentinel_archive.fleet_pull_timeout = 2s\n";
my $src = pgs_node('src', conf => $conf);
my $repo = pgs_node('repo', conf => $conf);
$repo->safe_psql('postgres',
	'CREATE SCHEMA fleet_ext; CREATE EXTENSION dblink SCHEMA fleet_ext; CREATE EXTENSION postgres_fdw');
for my $n ([$src, 'slow'], [$repo, 'self'])
{
	$repo->safe_psql('postgres',
		"SELECT pgsentinel_fleet_add('$n->[1]', \$\$" . $n->[0]->connstr('postgres')
		  . "\$\$, 'pull', pull_interval => '200ms')");
}
ok( $repo->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM pgsentinel_fleet_server
	 WHERE last_pull IS NOT NULL AND last_error IS NULL}),
	'both servers pulled by the archiver');

# An ordinary role holds the advisory key the fleet's partitions were once
# made under, and cannot lock the tables they are made under now: the pulls,
# which make each server's partitions, go on.
$repo->safe_psql('postgres', 'CREATE ROLE regress_locker LOGIN');
my $locker = $repo->background_psql('postgres', extra_params => [ '-U', 'regress_locker' ]);
$locker->query_safe(q{SELECT pg_advisory_lock(hashtext('pgsentinel_fleet_partitions'))});
my ($ret, $out, $err) = $repo->psql('postgres',
	'BEGIN; LOCK TABLE pgsentinel_fleet_batch IN SHARE UPDATE EXCLUSIVE MODE; COMMIT',
	extra_params => [ '-U', 'regress_locker' ]);
like($err, qr/permission denied for table pgsentinel_fleet_batch/,
	'an ordinary role cannot lock the tables the fleet locks');
my $t_lock = $repo->safe_psql('postgres', 'SELECT now()');
ok( $repo->poll_query_until('postgres', qq{
	SELECT count(*) = 2 FROM pgsentinel_fleet_server
	 WHERE last_pull > '$t_lock'::timestamptz + interval '1 second' AND last_error IS NULL}),
	'both servers pulled while an ordinary role holds the old advisory key');
$locker->quit;

# the source stops answering: its ring's view is locked there (and it is
# tried again only every 30 s: the failure stays shown meanwhile)
$repo->safe_psql('postgres',
	"UPDATE pgsentinel_fleet_server SET pull_interval = '30s' WHERE name = 'slow'");
my $lock = $src->background_psql('postgres');
$lock->query_safe('BEGIN; LOCK TABLE pgsentinel_ring_samples IN ACCESS EXCLUSIVE MODE');
my $t0 = $repo->safe_psql('postgres', 'SELECT now()');

ok( $repo->poll_query_until('postgres', q{
	SELECT last_error ~ 'statement timeout' FROM pgsentinel_fleet_server
	 WHERE name = 'slow'}),
	'the stuck pull fails after fleet_pull_timeout, its last_error says why');
ok( $repo->poll_query_until('postgres', q{
	SELECT diagnosis ~ 'fleet: the pull of fleet server "slow" failed at .*statement timeout'
	  FROM pgsentinel_status()}),
	'pgsentinel_status() names the server whose pull failed');
ok( $repo->poll_query_until('postgres', q{
	SELECT now() > last_pull + interval '2 seconds' FROM pgsentinel_fleet_server
	 WHERE name = 'slow'}),
	'ticks go by without a pull of the failed server');
like(pgs_status($repo, 'diagnosis'), qr/fleet: the pull of fleet server "slow" failed/,
	'the failure stays shown until that server is pulled again');
# the error names hosts and users: only who may read last_error sees it
my $unprivileged = $repo->safe_psql('postgres', 'SELECT diagnosis FROM pgsentinel_status()',
	extra_params => [ '-U', 'regress_locker' ]);
like($unprivileged, qr/fleet: the pull of fleet server "slow" failed at .*\(pgsentinel_fleet_status.last_error says why\)/,
	'a role without pg_read_all_stats is told where the error is');
unlike($unprivileged, qr/statement timeout/, '... and not the error itself');
# the other server is pulled meanwhile, more than once, and the archive
# goes on
ok( $repo->poll_query_until('postgres', qq{
	SELECT last_pull > '$t0'::timestamptz + interval '3 seconds' AND last_error IS NULL
	  FROM pgsentinel_fleet_server WHERE name = 'self'}),
	'the other server is pulled while the source does not answer');
ok( $repo->poll_query_until('postgres', qq{
	SELECT s.archive_state = 'ok' AND a.last_sample_time > '$t0'::timestamptz + interval '3 seconds'
	  FROM pgsentinel_status() s, pgsentinel_archive_state a}),
	'the repository archives its own samples meanwhile');

# the source answers again: pulled, and the error goes
$lock->query_safe('COMMIT');
$lock->quit;
$repo->safe_psql('postgres',
	"UPDATE pgsentinel_fleet_server SET pull_interval = '200ms', last_pull = NULL WHERE name = 'slow'");
ok( $repo->poll_query_until('postgres', q{
	SELECT last_error IS NULL FROM pgsentinel_fleet_server WHERE name = 'slow'}),
	'the source is pulled again once it answers');
ok( $repo->poll_query_until('postgres', q{
	SELECT diagnosis !~ 'fleet:' FROM pgsentinel_status()}),
	'and the status no longer names it');

# A relation that another role made under the name of a server's foreign
# table (here as if it had been free for a moment: pgsentinel's renamed)
# is refused by the archiver's own pulls, and what it would run never runs.
$repo->safe_psql('postgres', q{
	CREATE ROLE regress_planter;
	GRANT CREATE ON SCHEMA public TO regress_planter;
	SET ROLE regress_planter;
	CREATE FUNCTION public.regress_escalate() RETURNS boolean LANGUAGE plpgsql AS
	  $$BEGIN ALTER ROLE regress_planter SUPERUSER; RETURN true; END$$;
	RESET ROLE;
	REVOKE CREATE ON SCHEMA public FROM regress_planter});
my $pgss = $repo->safe_psql('postgres', q{
	SELECT foreign_server || '_pgss' FROM pgsentinel_fleet_server WHERE name = 'self'});
$repo->safe_psql('postgres', qq{
	ALTER FOREIGN TABLE $pgss RENAME TO regress_kept_pgss;
	CREATE VIEW public.$pgss AS
	  SELECT 0::int8 AS queryid, 0::oid AS dbid, 0::oid AS userid, 'x'::text AS query
	   WHERE public.regress_escalate();
	ALTER VIEW public.$pgss OWNER TO regress_planter});
ok( $repo->poll_query_until('postgres', q{
	SELECT last_error ~ 'is not the foreign table pgsentinel made' FROM pgsentinel_fleet_server
	 WHERE name = 'self'}),
	'the archiver\'s pull refuses a relation planted under a foreign table\'s name');
is($repo->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_planter'"),
	'f', 'and what it would run never ran');
$repo->safe_psql('postgres', qq{
	DROP VIEW public.$pgss;
	ALTER FOREIGN TABLE regress_kept_pgss RENAME TO $pgss});
ok( $repo->poll_query_until('postgres', q{
	SELECT last_error IS NULL FROM pgsentinel_fleet_server WHERE name = 'self'}),
	'pulled again once pgsentinel\'s foreign table is back');

done_testing();
