
# Visibility, column by column: what a role sees of a session in
# pg_active_session_history is what pg_stat_activity shows it of the same
# session (docs/visibility.md).  Sessions of another role (one over TCP,
# so that client_addr, client_hostname and client_port are set, one on
# CPU, lock waiters) are compared as an unprivileged role, as the sessions'
# own role and as a member of pg_read_all_stats; then the columns core
# does not have follow the documented rule: cmdtype and the query ids
# hidden with the texts, blockers shown as pg_blocking_pids() shows them,
# blocker_state shown when the blocker's role may be seen.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('vis', conf => "listen_addresses = '127.0.0.1'\nlog_hostname = on\n");
$node->safe_psql('postgres', q{
	CREATE TABLE t (id int PRIMARY KEY, v int);
	INSERT INTO t VALUES (1, 0), (2, 0);
	CREATE ROLE bob LOGIN;
	CREATE ROLE eve LOGIN;
	CREATE ROLE sam LOGIN IN ROLE pg_read_all_stats;
	GRANT ALL ON t TO bob, eve});

# The sessions: application_name => [role, over TCP, SQL, what to wait for].
# bob's h1 holds row 1 and sleeps; bob's w1 waits for it, eve's w2 queues
# behind w1; eve's h2 holds row 2, bob's w3 waits for it; bob's spin is
# active on CPU.
my @sessions = (
	[ 'vis_h1', 'bob', 1,
	  'BEGIN; UPDATE t SET v = v + 1 WHERE id = 1; SELECT pg_sleep(600); COMMIT',
	  "wait_event = 'PgSleep'" ],
	[ 'vis_w1', 'bob', 0, 'UPDATE t SET v = v + 1 WHERE id = 1',
	  "wait_event_type = 'Lock'" ],
	[ 'vis_w2', 'eve', 0, 'UPDATE t SET v = v + 1 WHERE id = 1',
	  "wait_event_type = 'Lock'" ],
	[ 'vis_h2', 'eve', 0,
	  'BEGIN; UPDATE t SET v = v + 1 WHERE id = 2; SELECT pg_sleep(600); COMMIT',
	  "wait_event = 'PgSleep'" ],
	[ 'vis_w3', 'bob', 0, 'UPDATE t SET v = v + 1 WHERE id = 2',
	  "wait_event_type = 'Lock'" ],
	[ 'vis_spin', 'bob', 0, 'DO $$BEGIN LOOP PERFORM 1; END LOOP; END$$',
	  "state = 'active' AND wait_event IS NULL" ],
);
# the role of each waiter's blocker
my %blocker_role = (vis_w1 => 'bob', vis_w2 => 'bob', vis_w3 => 'eve');

my (%pid, %role, @handles);
foreach my $s (@sessions)
{
	my ($app, $role, $tcp, $sql, $cond) = @$s;
	my $connstr =
	  $tcp
	  ? 'host=127.0.0.1 port=' . $node->port . ' dbname=postgres'
	  : $node->connstr('postgres');
	$connstr .= " user=$role application_name=$app";
	my $h = { out => '', err => '' };
	$h->{run} = IPC::Run::start(
		[ $node->installed_command('psql'), '-XAtq', '-d', $connstr, '-c', $sql ],
		'<', \undef, '>', \$h->{out}, '2>', \$h->{err});
	push @handles, $h;
	# one at a time, so that each waiter queues behind the one before
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '$app' AND $cond"),
		"$app started") or diag($h->{err});
	$pid{$app} = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = '$app'");
	$role{$app} = $role;
}

# Every column pg_stat_activity shares with the history, as the history
# names it; client_addr as text(inet), which is how the history shows it.
my $shared = q{datid, datname, pid, leader_pid, usesysid, usename,
	application_name, client_addr, client_hostname, client_port,
	backend_start, xact_start, query_start, state_change, wait_event_type,
	wait_event, state, backend_xid, backend_xmin, backend_type,
	top_level_query, queryid};
my $psa = qq{SELECT datid, datname, pid, leader_pid, usesysid, usename,
	application_name, text(client_addr) AS client_addr, client_hostname,
	client_port, backend_start, xact_start, query_start, state_change,
	wait_event_type, wait_event, state, backend_xid, backend_xmin,
	backend_type, query AS top_level_query, query_id AS queryid
	FROM pg_stat_activity};
my $newest = q{SELECT * FROM pg_active_session_history h
	WHERE h.pid = %d ORDER BY sample_id DESC LIMIT 1};

# Wait until the newest row of every session shows it as it is now (the
# superuser sees everything; the history says 'CPU' where core says NULL).
my @checks;
foreach my $app (sort keys %pid)
{
	my $pid = $pid{$app};
	push @checks, sprintf(q{(SELECT count(*) = 1 FROM (%s) a, (%s WHERE pid = %d) p
		WHERE a.state_change = p.state_change
		  AND a.backend_xmin IS NOT DISTINCT FROM p.backend_xmin
		  AND a.backend_xid IS NOT DISTINCT FROM p.backend_xid
		  AND (a.wait_event = p.wait_event OR
		       (a.wait_event = 'CPU' AND p.wait_event IS NULL))
		  AND a.query_start = p.query_start
		  AND (a.blocker_state IS NOT NULL) =
		      (p.wait_event_type IS NOT DISTINCT FROM 'Lock'))},
		sprintf($newest, $pid), $psa, $pid);
}
ok($node->poll_query_until('postgres', 'SELECT ' . join(' AND ', @checks)),
	'every session sampled as it is now');

# May $reader see the sessions of $role?  pg_stat_activity's rule.
sub may_see
{
	my ($reader, $role) = @_;
	return $reader eq 'sam' || $reader eq $role;
}

# The shared columns of a session as pg_stat_activity and as its newest
# history row show them to $reader: two hashes, column => value or undef.
sub both_views
{
	my ($reader, $pid) = @_;
	my $out = $node->safe_psql('postgres', sprintf(q{
		SELECT k, p.v IS NULL, p.v, a.v IS NULL, a.v
		FROM jsonb_each_text((SELECT to_jsonb(p) FROM (%s WHERE pid = %d) p)) p(k, v)
		FULL JOIN jsonb_each_text((SELECT to_jsonb(a) FROM (SELECT %s FROM (%s) n) a)) a(k, v)
		USING (k)}, $psa, $pid, $shared, sprintf($newest, $pid)),
		extra_params => [ '-U', $reader, '-F', "\x1f" ]);
	my (%p, %a);
	foreach my $line (split /\n/, $out)
	{
		my ($k, $pnull, $pv, $anull, $av) = split /\x1f/, $line, -1;
		$p{$k} = $pnull eq 't' ? undef : $pv;
		$a{$k} = $anull eq 't' ? undef : $av;
	}
	return (\%p, \%a);
}

foreach my $reader (qw(eve bob sam))
{
	foreach my $app (sort keys %pid)
	{
		my $visible = may_see($reader, $role{$app});
		my ($p, $a) = both_views($reader, $pid{$app});
		is(scalar(keys %$a), 22, "$reader, $app: 22 shared columns");
		# the one difference by design: 'CPU' for a session active and not
		# waiting, which only a reader who may see the session sees
		if ($app eq 'vis_spin')
		{
			if ($visible)
			{
				is($a->{wait_event} . '/' . $a->{wait_event_type}, 'CPU/CPU',
					"$reader, $app: on CPU");
				$a->{wait_event} = $a->{wait_event_type} = undef;
			}
			else
			{
				ok(!defined $a->{wait_event} && !defined $a->{wait_event_type},
					"$reader, $app: NULL wait event, not 'CPU'");
			}
		}
		is_deeply($a, $p,
			"$reader, $app: every shared column as pg_stat_activity shows it");
		if ($visible)
		{
			ok(defined $a->{state} && defined $a->{backend_start},
				"$reader, $app: state and backend_start shown");
		}
		else
		{
			is($a->{top_level_query}, '<insufficient privilege>',
				"$reader, $app: texts hidden");
		}
		if ($app eq 'vis_h1')
		{
			if ($visible)
			{
				like(join(',', map { $a->{$_} // '' } qw(client_addr client_hostname client_port)),
					qr/^127\.0\.0\.1\/32,localhost,\d+$/,
					"$reader, $app: client_addr, client_hostname, client_port");
			}
			else
			{
				ok( !defined $a->{client_addr} && !defined $a->{client_hostname}
					  && !defined $a->{client_port},
					"$reader, $app: client address, host and port hidden");
			}
		}
	}

	# the columns core does not have
	my $out = $node->safe_psql('postgres', join(' UNION ALL ', map {
		sprintf(q{SELECT '%s', cmdtype IS NULL, nested_queryid IS NULL,
			query, blockers, blockerpid IS NULL, coalesce(blocker_state, '-'),
			(SELECT array_agg(x ORDER BY x) FROM unnest(blocking_pids) x) IS NOT DISTINCT FROM
			(SELECT array_agg(x ORDER BY x) FROM unnest(pg_blocking_pids(pid)) x),
			blockerpid IS NULL OR blockerpid = ANY (pg_blocking_pids(pid)),
			ash_time IS NOT NULL AND sample_id IS NOT NULL
			FROM (%s) n}, $_, sprintf($newest, $pid{$_}))
	} sort keys %pid), extra_params => [ '-U', $reader ]);
	foreach my $line (split /\n/, $out)
	{
		my ($app, $cmd_null, $nested_null, $query, $blockers, $bpid_null,
			$bstate, $same_pids, $bpid_ok, $sample) = split /\|/, $line;
		my $visible = may_see($reader, $role{$app});
		my $waiter = exists $blocker_role{$app};
		is($cmd_null, $visible ? 'f' : 't', "$reader, $app: cmdtype shown iff visible");
		is($nested_null, $visible ? 'f' : 't', "$reader, $app: nested_queryid shown iff visible");
		is($query eq '<insufficient privilege>' ? 'hidden' : 'shown',
			$visible ? 'shown' : 'hidden', "$reader, $app: query shown iff visible");
		is($blockers > 0 ? 'waits' : 'runs', $waiter ? 'waits' : 'runs',
			"$reader, $app: blockers shown to all");
		is($bpid_null, $waiter ? 'f' : 't', "$reader, $app: blockerpid shown to all");
		is($same_pids, 't', "$reader, $app: blocking_pids as pg_blocking_pids()");
		is($bpid_ok, 't', "$reader, $app: blockerpid one of pg_blocking_pids()");
		is($bstate,
			$waiter && may_see($reader, $blocker_role{$app}) ? 'active' : '-',
			"$reader, $app: blocker_state shown iff the blocker's role is visible");
		is($sample, 't', "$reader, $app: ash_time and sample_id shown");
	}
}

pgs_stop_bg($_) foreach @handles;
$node->stop;
done_testing();
