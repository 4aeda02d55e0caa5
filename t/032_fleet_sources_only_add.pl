# A fleet source adds its own rows to the repository and nothing else
# (docs/security.md).  Its publication is its own: widened to updates,
# deletes and truncates, the repository's apply worker would apply them to
# the repository's own archive tables (the ones the subscription lands in).
# Here the source updates and deletes archive rows whose keys the
# repository's own archive holds too, then truncates its archive: no row
# of the repository changes, its copy of the source's rows neither, the
# truncate stops the subscription with an error that says why, and once
# skipped the source's new rows arrive again.

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
  . "max_replication_slots = 10\n"
  . "max_logical_replication_workers = 10\nmax_worker_processes = 20\n";
my $src = pgs_node('src', conf => $conf . "max_wal_senders = 10\n", init_opts => { allows_streaming => 'logical' });
my $repo = pgs_node('repo', conf => $conf);
$repo->safe_psql('postgres', 'CREATE SCHEMA fleet_ext; CREATE EXTENSION dblink SCHEMA fleet_ext; CREATE EXTENSION postgres_fdw');

# Rows of the same keys in both archives: a day far in the past, with a
# sample and a text of the same identity on each server.
for my $n ([$src, 'source'], [$repo, 'repository'])
{
	$n->[0]->safe_psql('postgres', qq{
		CREATE TABLE pgsentinel_archive_batch_old PARTITION OF pgsentinel_archive_batch
		  FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
		CREATE TABLE pgsentinel_archive_text_old PARTITION OF pgsentinel_archive_text
		  FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
		INSERT INTO pgsentinel_archive_batch (first_time, last_time, sample_data, row_data)
		  VALUES ('2020-01-01 12:00+00', '2020-01-01 12:00+00',
		          pgsentinel_sample_pack('{0}', '{0}', '{1}', '{1}', '{0}', '{f}'),
		          pgsentinel_batch_pack(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		            NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
		INSERT INTO pgsentinel_archive_text (day, text_id, hash, text)
		  VALUES ('2020-01-01', 1, 1, 'SELECT $n->[1]')});
}

$repo->safe_psql('postgres',
	"SELECT pgsentinel_fleet_add('src', \$\$" . $src->connstr('postgres') . "\$\$, 'logical')");

ok( $repo->poll_query_until('postgres', q{
		SELECT count(*) > 0 AND count(*) FILTER (WHERE srsubstate <> 'r') = 0
		  FROM pg_subscription_rel}),
	'the subscription has copied the source\'s archive');


my $changes_offset = -s $repo->logfile;
$src->safe_psql('postgres', q{
	ALTER PUBLICATION pgsentinel_fleet SET (publish = 'insert, update, delete, truncate');
	ALTER TABLE pgsentinel_archive_batch REPLICA IDENTITY FULL;
	ALTER TABLE pgsentinel_archive_batch_old REPLICA IDENTITY FULL;
	UPDATE pgsentinel_archive_text SET text = 'forged' WHERE day = '2020-01-01';
	UPDATE pgsentinel_archive_batch
	  SET sample_data = pgsentinel_sample_pack('{0}', '{0}', '{1}', '{1}', '{99}', '{f}')
	 WHERE first_time < '2020-01-02';
	DELETE FROM pgsentinel_archive_text WHERE day = '2020-01-01';
	INSERT INTO pgsentinel_archive_text (day, text_id, hash, text)
	  VALUES ('2020-01-01', 2, 2, 'SELECT after the update')});
# the apply worker has gone through the source's transaction once it
# skipped its last change
ok( $repo->wait_for_log(
		qr/fleet server "src" sent an DELETE of pgsentinel_archive_text\w*: ignored, a source may only add rows/,
		$changes_offset),
	'the source\'s updates and deletes reach the repository and are skipped');
is( $repo->safe_psql('postgres', q{
		SELECT string_agg(text, ', ' ORDER BY text) FROM pgsentinel_archive_text
		 WHERE day = '2020-01-01'}),
	'SELECT repository', 'the repository\'s own text is neither forged nor deleted');
is( $repo->safe_psql('postgres', q{
		SELECT active_sessions FROM pgsentinel_sample_archive
		 WHERE sample_time = '2020-01-01 12:00+00'}),
	'0', 'the repository\'s own sample is not updated');
is( $repo->safe_psql('postgres', q{
		SELECT count(*) FROM pgsentinel_fleet_text WHERE text = 'forged'}),
	'0', 'the copy of the source\'s rows is not changed either');

# A batch whose rows are in a format the repository cannot read (a newer
# build's) stops the subscription at that batch, the error saying why and
# what to do; skipped by its LSN, what follows lands.
my $format_offset = -s $repo->logfile;
$src->safe_psql('postgres', q{
	INSERT INTO pgsentinel_archive_batch (first_time, last_time, sample_data, row_data)
	VALUES (now() - interval '1 second', now() - interval '1 second',
	        pgsentinel_sample_pack('{1}', '{0}', '{1}', '{1}', '{0}', '{f}'), '\x0900')});
ok( $repo->wait_for_log(
		qr/archive batch format 9 is not supported by this version of pgsentinel/,
		$format_offset),
	'a batch in a format the repository cannot read is refused, saying so');
like(slurp_file($repo->logfile, $format_offset),
	qr/HINT:  .*update the extension on this server/,
	'with the way out');
my ($skip_lsn) = slurp_file($repo->logfile, $format_offset) =~ /finished at ([0-9A-F]+\/[0-9A-F]+)/;
my $sub = $repo->safe_psql('postgres', 'SELECT subname FROM pg_subscription');
$repo->safe_psql('postgres', "ALTER SUBSCRIPTION \"$sub\" SKIP (lsn = '$skip_lsn')");
$src->safe_psql('postgres', q{
	INSERT INTO pgsentinel_archive_text (day, text_id, hash, text)
	  VALUES (timezone('UTC', now())::date, 2000000000, 3, 'SELECT after the skipped batch')});
ok( $repo->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pgsentinel_fleet_text
		 WHERE text = 'SELECT after the skipped batch'}),
	'skipped, the source\'s later rows land');

# a truncate stops the subscription with an error saying why
my $log_offset = -s $repo->logfile;
$src->safe_psql('postgres', 'TRUNCATE pgsentinel_archive_batch');
ok( $repo->wait_for_log(qr/fleet server "src" sent a TRUNCATE of pgsentinel_archive_batch: a source may only add rows/,
		$log_offset),
	'a truncate is refused, the error names the source');
is( $repo->safe_psql('postgres', q{
		SELECT count(*) FROM pgsentinel_sample_archive WHERE sample_time = '2020-01-01 12:00+00'}),
	'1', 'the repository\'s own archive is not emptied');
is( $repo->safe_psql('postgres', q{
		SELECT count(*) > 0 FROM pgsentinel_sample_archive WHERE sample_time > now() - interval '1 hour'}),
	't', 'nor its recent samples');

$repo->stop;
$src->stop;
done_testing();
