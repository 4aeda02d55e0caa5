
# Column fidelity over TCP: every column of a sampled row equals what
# pg_stat_activity shows for the same session at the same time (client
# address, host name and port included, which the unix-socket regression
# tests cannot see).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('tcp', conf => "listen_addresses = '127.0.0.1'\nlog_hostname = on\n");
$node->safe_psql('postgres',
	'CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0); CREATE ROLE alice LOGIN; GRANT ALL ON t TO alice');

# a TCP session of another role, in a transaction that holds an xid
my $h = { out => '', err => '' };
my $connstr = 'host=127.0.0.1 port=' . $node->port . ' dbname=postgres user=alice application_name=tcp_app';
$h->{run} = IPC::Run::start(
	[ $node->installed_command('psql'), '-XAtq', '-d', $connstr, '-c',
	  "BEGIN; UPDATE t SET v = v + 1 WHERE id = 1; SELECT pg_sleep(600) /* tcpsleep */; COMMIT" ],
	'<', \undef, '>', \$h->{out}, '2>', \$h->{err});
ok(pgs_wait_sessions($node, 1, '%tcpsleep%'), 'TCP session sleeping');
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE '%tcpsleep%' AND pid <> pg_backend_pid()");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) >= 2 FROM pg_active_session_history WHERE pid = $pid AND wait_event = 'PgSleep'"),
	'sampled');

my @cols = qw(datid datname usesysid usename application_name client_addr
  client_hostname client_port backend_start xact_start query_start
  state_change wait_event_type wait_event state backend_xid backend_xmin
  backend_type leader_pid);
my $list_a = join(', ', map { "a.$_" } @cols);
my $list_p = join(', ', map { "p.$_" } @cols);
# the newest row against pg_stat_activity (nothing changes while it sleeps)
my $r = $node->safe_psql('postgres', qq{
	SELECT ($list_a)::text, ($list_p)::text,
	       a.top_level_query = p.query, a.query = p.query, a.queryid = p.query_id, a.cmdtype,
	       a.client_addr = host(p.client_addr) || '/32'
	FROM (SELECT * FROM pg_active_session_history WHERE pid = $pid AND wait_event = 'PgSleep'
	      ORDER BY sample_id DESC LIMIT 1) a
	JOIN (SELECT *, client_addr::text AS client_addr_text FROM pg_stat_activity) p USING (pid)});
my ($ash, $psa, $tq, $q, $qid, $cmd, $addr) = split /\|/, $r;
# pg_stat_activity shows client_addr as inet ("127.0.0.1"); the history, like
# pgsentinel 1.4, as text(inet) ("127.0.0.1/32")
(my $psa_norm = $psa) =~ s/,127\.0\.0\.1,/,127.0.0.1\/32,/;
is($ash, $psa_norm, 'every column equals pg_stat_activity (client_addr as text(inet))');
like($ash, qr/,alice,tcp_app,127\.0\.0\.1\/32,localhost,\d+,/,
	'role, application_name, client_addr, client_hostname, client_port');
like($ash, qr/,Timeout,PgSleep,active,\d+,/, 'wait event, state and backend_xid');
is($tq, 't', 'top_level_query = pg_stat_activity.query');
is($q, 't', 'query = pg_stat_activity.query at top level');
is($qid, 't', 'queryid = pg_stat_activity.query_id');
is($cmd, 'SELECT', 'cmdtype SELECT');
is($addr, 't', 'client_addr is text(inet) of the address');

pgs_stop_bg($h);
$node->stop;
done_testing();
