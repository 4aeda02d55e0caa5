
# Helpers shared by pgsentinel's TAP tests (t/*.pl).
#
# Every helper waits by polling the server (poll_query_until), never by a
# fixed sleep, so the tests stay deterministic on a slow or busy machine.

package PgsTest;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our $bg_files = 0;

# PostgreSQL::Test::Cluster bails out when pg_ctl fails (a server that does
# not stop or start), and a bail-out stops prove: every later file would be
# skipped.  Here it fails the file that met it, and the others still run.
{
	no strict 'refs';
	no warnings 'redefine';
	for my $pkg ('PostgreSQL::Test::Cluster', 'PostgreSQL::Test::Utils')
	{
		next unless defined &{"${pkg}::BAIL_OUT"};
		*{"${pkg}::BAIL_OUT"} = sub {
			Test::More::diag("bail out of this file: @_");
			exit 255;
		};
	}
}
our @EXPORT = qw(pgs_node pgs_status pgs_start_bg pgs_start_interactive pgs_start_sleepers pgs_stop_bg
  pgs_wait_sessions pgs_wait_samples pgs_worker_pid pgs_rss_kb
  pgs_pgbench_bg pgs_server_time pgs_wait_until_time pgs_perf_check);

# Create, configure and start a node with pgsentinel preloaded and sampling
# every 10 ms.  Options:
#   conf      => extra postgresql.conf text
#   preload   => 0 to leave shared_preload_libraries empty
#   create    => 0 to skip CREATE EXTENSION pgsentinel (and pg_stat_statements,
#                which is created with it, as a real setup has it)
#   start     => 0 to only init and configure
#   init_opts => hash of options for $node->init
sub pgs_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opt{init_opts} // {} });
	my $preload = $opt{preload} // 1;
	my $conf = '';
	$conf .= "shared_preload_libraries = 'pg_stat_statements,pgsentinel'\n"
	  if $preload;
	$conf .= "pgsentinel_ash.sampling_period = 0.01\n" if $preload;
	$conf .= "compute_query_id = auto\n";
	$conf .= "max_connections = 40\n";
	$conf .= "log_min_messages = info\n";
	# the tests kill processes on purpose: let the postmaster reinitialize
	$conf .= "restart_after_crash = on\n";
	$conf .= $opt{conf} if defined $opt{conf};
	$node->append_conf('postgresql.conf', $conf);
	return $node if defined $opt{start} && !$opt{start};
	$node->start;
	$node->safe_psql('postgres',
		'CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pgsentinel')
	  if $preload && ($opt{create} // 1);
	return $node;
}

# One column of pgsentinel_status().
sub pgs_status
{
	my ($node, $col) = @_;
	return $node->safe_psql('postgres',
		"SELECT $col FROM pgsentinel_status()");
}

# pid of the sampler as pg_stat_activity shows it ('' when absent).
sub pgs_worker_pid
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'pgsentinel'"
	);
}

# Start psql running $sql in the background (as role $opt{user} if given);
# returns a handle with the output buffers.  Use pgs_stop_bg to end it.
sub pgs_start_bg
{
	my ($node, $sql, %opt) = @_;
	my $h = { out => '', err => '' };
	my @cmd = (
		$node->installed_command('psql'), '-XAtq', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr($opt{dbname} // 'postgres'));
	push @cmd, '-U', $opt{user} if defined $opt{user};
	# -c sends the text exactly as given; an argument is limited to 128 kB,
	# so longer texts go through a file
	if (length($sql) < 100_000)
	{
		push @cmd, '-c', $sql;
	}
	else
	{
		my $f = $node->basedir . '/bg_' . (++$PgsTest::bg_files) . '.sql';
		PostgreSQL::Test::Utils::append_to_file($f, $sql);
		push @cmd, '-f', $f;
	}
	$h->{run} = IPC::Run::start(\@cmd, '<', \undef, '>', \$h->{out}, '2>',
		\$h->{err});
	return $h;
}

# Start psql reading $sql from its standard input, which stays open after:
# the session stays connected, idle, until pgs_stop_bg().
sub pgs_start_interactive
{
	my ($node, $sql) = @_;
	my $h = { in => $sql, out => '', err => '' };
	$h->{run} = IPC::Run::start(
		[ $node->installed_command('psql'), '-XAtq', '-d', $node->connstr('postgres') ],
		'<', \$h->{in}, '>', \$h->{out}, '2>', \$h->{err});
	# IPC::Run writes the input only when pumped
	$h->{run}->pump_nb while length $h->{in};
	return $h;
}

# Run pgbench in the background: @args after the connection options.
sub pgs_pgbench_bg
{
	my ($node, @args) = @_;
	my $h = { out => '', err => '' };
	my @cmd = (
		$node->installed_command('pgbench'), '-h', $node->host, '-p',
		$node->port, @args);
	$h->{run} =
	  IPC::Run::start(\@cmd, '<', \undef, '>', \$h->{out}, '2>', \$h->{err});
	return $h;
}

# Start $n sessions sleeping $seconds in pg_sleep(), their query tagged
# with the comment /* $tag */, and wait until all are active (one test
# result).  Returns the pgbench handle: pgs_stop_bg() ends them.
sub pgs_start_sleepers
{
	my ($node, $n, $seconds, $tag) = @_;
	my $script = $node->basedir . '/sleep_' . (++$PgsTest::bg_files) . '.sql';
	PostgreSQL::Test::Utils::append_to_file($script,
		"SELECT pg_sleep($seconds) /* $tag */;\n");
	my $h = pgs_pgbench_bg($node, '-n', '-c', $n, '-j', '2', '-t', '1',
		'-f', $script, 'postgres');
	Test::More::ok(pgs_wait_sessions($node, $n, "%$tag%"),
		"$n sessions sleeping ($tag)");
	return $h;
}

# End a background process; returns its exit code (or undef if it had to
# be killed).
sub pgs_stop_bg
{
	my ($h, %opt) = @_;
	if ($opt{wait})
	{
		$h->{run}->finish;
		return $h->{run}->result(0);
	}
	$h->{run}->kill_kill(grace => 5);
	return undef;
}

# Wait until at least $n sessions whose query matches the LIKE pattern are
# active and waiting on $wait (default PgSleep).
sub pgs_wait_sessions
{
	my ($node, $n, $like, $wait) = @_;
	$wait //= 'PgSleep';
	return $node->poll_query_until('postgres',
		"SELECT count(*) >= $n FROM pg_stat_activity WHERE query LIKE '$like' AND state = 'active' AND wait_event = '$wait'"
	);
}

# Wait until $n more samples were taken than when called.
sub pgs_wait_samples
{
	my ($node, $n) = @_;
	my $s = pgs_status($node, 'samples_taken');
	return $node->poll_query_until('postgres',
		"SELECT samples_taken >= $s + $n FROM pgsentinel_status()");
}

# The server's clock, as text.
sub pgs_server_time
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT clock_timestamp()');
}

# Wait until the server's clock has passed $t + $secs seconds.  For
# measuring rates over a window, not for waiting on an event.
sub pgs_wait_until_time
{
	my ($node, $t, $secs) = @_;
	return $node->poll_query_until('postgres',
		"SELECT clock_timestamp() >= '$t'::timestamptz + interval '$secs seconds'"
	);
}

# A figure that measures the machine as much as the code (samples per
# second, the largest gap between samples, a lock wait): noted, and
# compared with its bound (cmp_ok) only when PGS_PERF_CHECKS=1, on a quiet
# machine.  A test keeps a hard cmp_ok of its own for the bound a real bug
# crosses whatever the load (a sampler that stops, a reader that blocks it
# for a second); speed is measured in bench/.
sub pgs_perf_check
{
	my ($got, $op, $bound, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return Test::More::cmp_ok($got, $op, $bound, $name)
	  if $ENV{PGS_PERF_CHECKS};
	Test::More::note("$name: $got (checked $op $bound with PGS_PERF_CHECKS=1)");
	return 1;
}

# RssAnon and VmRSS (kB) of a process, from /proc.
sub pgs_rss_kb
{
	my ($pid) = @_;
	my %r;
	open(my $fh, '<', "/proc/$pid/status") or return ();
	while (<$fh>)
	{
		$r{$1} = $2 if /^(VmRSS|RssAnon|RssShmem):\s+(\d+)\s+kB/;
	}
	close $fh;
	return \%r;
}

1;
