
# Reliability 7: bad settings.  Every pgsentinel setting refuses negative,
# zero, huge, fractional-out-of-range and non-numeric values with a message
# naming the setting (and the allowed range for numbers), through ALTER
# SYSTEM, through postgresql.conf + reload and at server start; the server
# stays up and keeps the old value.  A very large ring is either allocated
# or refused with a log line that names the setting to lower.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('settings');

my %defaults;
foreach my $g (qw(pgsentinel_ash.sampling_period pgsentinel_ash.max_entries
	pgsentinel_ash.text_area_size pgsentinel_ash.track_idle_trans
	pgsentinel_pgssh.max_entries pgsentinel_pgssh.enable pgsentinel.db_name))
{
	$defaults{$g} = $node->safe_psql('postgres', "SHOW $g");
}
is($defaults{'pgsentinel_ash.sampling_period'}, '0.01', 'period from postgresql.conf');

# --- ALTER SYSTEM ---------------------------------------------------------------

my $range_period = qr/outside the valid range for parameter "pgsentinel_ash\.sampling_period" \(0\.01 \.\. 3600\)/;
my $range_ash = qr/outside the valid range for parameter "pgsentinel_ash\.max_entries" \(1000 \.\. 50000000\)/;
my $range_pgssh = qr/outside the valid range for parameter "pgsentinel_pgssh\.max_entries" \(1000 \.\. 50000000\)/;
my $range_text = qr/outside the valid range for parameter "pgsentinel_ash\.text_area_size" \(64 \.\. 1048576\)/;
my @bad = (
	[ 'pgsentinel_ash.sampling_period', '-1', $range_period ],
	[ 'pgsentinel_ash.sampling_period', '0', $range_period ],
	[ 'pgsentinel_ash.sampling_period', '0.001', $range_period ],
	[ 'pgsentinel_ash.sampling_period', '1e10', $range_period ],
	[ 'pgsentinel_ash.sampling_period', "'abc'", qr/invalid value for parameter "pgsentinel_ash\.sampling_period": "abc"/ ],
	[ 'pgsentinel_ash.sampling_period', "'NaN'", qr/invalid value for parameter "pgsentinel_ash\.sampling_period": "NaN"/ ],
	[ 'pgsentinel_ash.sampling_period', "''", qr/invalid value for parameter "pgsentinel_ash\.sampling_period"/ ],
	[ 'pgsentinel_ash.max_entries', '-1', $range_ash ],
	[ 'pgsentinel_ash.max_entries', '0', $range_ash ],
	[ 'pgsentinel_ash.max_entries', '999', $range_ash ],
	[ 'pgsentinel_ash.max_entries', '999.4', $range_ash ],
	[ 'pgsentinel_ash.max_entries', '50000001', $range_ash ],
	[ 'pgsentinel_ash.max_entries', '99999999999', qr/invalid value for parameter "pgsentinel_ash\.max_entries"|$range_ash/ ],
	[ 'pgsentinel_ash.max_entries', "'abc'", qr/invalid value for parameter "pgsentinel_ash\.max_entries": "abc"/ ],
	[ 'pgsentinel_ash.text_area_size', '-1', $range_text ],
	[ 'pgsentinel_ash.text_area_size', '0', $range_text ],
	[ 'pgsentinel_ash.text_area_size', "'63kB'", $range_text ],
	[ 'pgsentinel_ash.text_area_size', "'2TB'", qr/pgsentinel_ash\.text_area_size/ ],
	[ 'pgsentinel_ash.text_area_size', "'10 apples'", qr/invalid value for parameter "pgsentinel_ash\.text_area_size"/ ],
	[ 'pgsentinel_ash.track_idle_trans', "'maybe'", qr/parameter "pgsentinel_ash\.track_idle_trans" requires a Boolean value/ ],
	[ 'pgsentinel_ash.track_idle_trans', '2', qr/parameter "pgsentinel_ash\.track_idle_trans" requires a Boolean value/ ],
	[ 'pgsentinel_ash.track_idle_trans', '-1', qr/parameter "pgsentinel_ash\.track_idle_trans" requires a Boolean value/ ],
	[ 'pgsentinel_pgssh.max_entries', '-5', $range_pgssh ],
	[ 'pgsentinel_pgssh.max_entries', '0', $range_pgssh ],
	[ 'pgsentinel_pgssh.max_entries', '1e12', qr/invalid value for parameter "pgsentinel_pgssh\.max_entries"|$range_pgssh/ ],
	[ 'pgsentinel_pgssh.max_entries', "'lots'", qr/invalid value for parameter "pgsentinel_pgssh\.max_entries": "lots"/ ],
	[ 'pgsentinel_pgssh.sweep_interval', '-1', qr/outside the valid range for parameter "pgsentinel_pgssh\.sweep_interval" \(0 \.\. 3600\)/ ],
	[ 'pgsentinel_pgssh.sweep_interval', "'2h'", qr/outside the valid range for parameter "pgsentinel_pgssh\.sweep_interval" \(0 \.\. 3600\)/ ],
	[ 'pgsentinel_pgssh.sweep_interval', "'often'", qr/invalid value for parameter "pgsentinel_pgssh\.sweep_interval": "often"/ ],
	[ 'pgsentinel_pgssh.enable', "'perhaps'", qr/parameter "pgsentinel_pgssh\.enable" requires a Boolean value/ ],
	[ 'pgsentinel_pgssh.enable', '3', qr/parameter "pgsentinel_pgssh\.enable" requires a Boolean value/ ],
	[ 'pgsentinel_ash.no_such_setting', '1', qr/unrecognized configuration parameter "pgsentinel_ash\.no_such_setting"|"pgsentinel_ash" is a reserved prefix/ ],
	[ 'pgsentinel.no_such_setting', '1', qr/unrecognized configuration parameter "pgsentinel\.no_such_setting"|"pgsentinel" is a reserved prefix/ ],
	[ 'pgsentinel_pgssh.no_such_setting', '1', qr/unrecognized configuration parameter "pgsentinel_pgssh\.no_such_setting"|"pgsentinel_pgssh" is a reserved prefix/ ],
);
foreach my $b (@bad)
{
	my ($g, $v, $re) = @$b;
	my ($ret, $out, $err) =
	  $node->psql('postgres', "ALTER SYSTEM SET $g = $v", extra_params => [ '-v', 'VERBOSITY=default' ]);
	isnt($ret, 0, "ALTER SYSTEM SET $g = $v refused");
	like($err, $re, "ALTER SYSTEM SET $g = $v: message names the setting" . ($re =~ /valid range/ ? ' and its range' : ''));
}
my $auto = slurp_file($node->data_dir . '/postgresql.auto.conf');
unlike($auto, qr/pgsentinel/, 'nothing written to postgresql.auto.conf');
foreach my $g (sort keys %defaults)
{
	is($node->safe_psql('postgres', "SHOW $g"), $defaults{$g}, "$g unchanged");
}

# sighup settings cannot be changed by SET
my ($ret, $out, $err) = $node->psql('postgres', 'SET pgsentinel_ash.sampling_period = 0.5');
like($err, qr/parameter "pgsentinel_ash\.sampling_period" cannot be changed now/,
	'SET of the period refused in a session');

# the prefixes are reserved: no placeholder can be set in a session
foreach my $p (qw(pgsentinel pgsentinel_ash pgsentinel_pgssh))
{
	($ret, $out, $err) = $node->psql('postgres', "SET $p.no_such_setting = 1", extra_params => [ '-v', 'VERBOSITY=default' ]);
	like($err, qr/invalid configuration parameter name "$p\.no_such_setting".*\n.*"$p" is a reserved prefix/,
		"SET $p.no_such_setting refused: $p is a reserved prefix");
}

# core rounds fractional integers; an in-range result is accepted
is($node->psql('postgres', 'ALTER SYSTEM SET pgsentinel_ash.max_entries = 1500.5'), 0,
	'ALTER SYSTEM max_entries = 1500.5 accepted (core rounds integers)');
like(slurp_file($node->data_dir . '/postgresql.auto.conf'),
	qr/pgsentinel_ash\.max_entries = '1500\.5'/, 'written as given');
is($node->psql('postgres', 'ALTER SYSTEM RESET pgsentinel_ash.max_entries'), 0, 'reset');

# --- postgresql.conf + reload ---------------------------------------------------

my $conf = $node->data_dir . '/postgresql.conf';
my $orig_conf = slurp_file($conf);
my $log_off = -s $node->logfile;
append_to_file($conf, <<'EOF');
pgsentinel_ash.sampling_period = -5
pgsentinel_ash.track_idle_trans = maybe
pgsentinel_pgssh.enable = 7
pgsentinel_ash.max_entries = 10
pgsentinel_ash.text_area_size = abc
pgsentinel_ash.bogus_name = 1
EOF
$node->reload;
ok($node->wait_for_log(qr/configuration file .* contains errors/, $log_off),
	'reload: log says the configuration file contains errors');
my $log = substr(slurp_file($node->logfile), $log_off);
like($log, qr/-5 is outside the valid range for parameter "pgsentinel_ash\.sampling_period" \(0\.01 \.\. 3600\)/,
	'reload: log names the bad period and its range');
like($log, qr/parameter "pgsentinel_ash\.track_idle_trans" requires a Boolean value/,
	'reload: log names track_idle_trans');
like($log, qr/parameter "pgsentinel_pgssh\.enable" requires a Boolean value/,
	'reload: log names pgsentinel_pgssh.enable');
like($log, qr/"pgsentinel_ash\.max_entries"/, 'reload: log names pgsentinel_ash.max_entries');
like($log, qr/"pgsentinel_ash\.text_area_size"/, 'reload: log names pgsentinel_ash.text_area_size');
like($log, qr/pgsentinel_ash\.bogus_name/, 'reload: log names the unknown setting');
foreach my $g (sort keys %defaults)
{
	is($node->safe_psql('postgres', "SHOW $g"), $defaults{$g}, "after bad reload: $g unchanged");
}
is(pgs_status($node, 'sampling_period'), '0.01', 'status: period unchanged');
ok(pgs_wait_samples($node, 50), 'worker still samples at the old pace');
my $t = pgs_server_time($node);
my $s = pgs_status($node, 'samples_taken');
ok(pgs_wait_until_time($node, $t, 2), 'two seconds');
# A bound a period of 1 s or more crosses (at most 4 samples in 2 s), not a
# measure of the machine's speed (200 expected at 10 ms).
cmp_ok(pgs_status($node, 'samples_taken') - $s, '>=', 5,
	'worker kept a sub-second period (the bad value was not applied)');
unlike($log, qr/PANIC|terminated by signal/, 'no crash after the bad reload');
open(my $fh, '>', $conf) or die;
print $fh $orig_conf;
close $fh;
$node->reload;

# --- bad values in postgresql.conf at start -------------------------------------

append_to_file($conf, "pgsentinel_ash.sampling_period = -5\npgsentinel_ash.max_entries = 60000000\npgsentinel_ash.text_area_size = 10\n");
$log_off = -s $node->logfile;
$node->restart;
$log = substr(slurp_file($node->logfile), $log_off);
like($log, qr/pgsentinel_ash\.sampling_period/, 'start with bad period: log names it');
like($log, qr/pgsentinel_ash\.max_entries/, 'start with bad max_entries: log names it');
like($log, qr/pgsentinel_ash\.text_area_size/, 'start with bad text_area_size: log names it');
is($node->safe_psql('postgres', 'SHOW pgsentinel_ash.sampling_period'), '1',
	'bad period at start: built-in default (1 s) used');
is(pgs_status($node, 'ash_capacity'), '36000', 'bad max_entries at start: default capacity');
ok(pgs_wait_samples($node, 1), 'sampling works after a start with bad values');
open($fh, '>', $conf) or die;
print $fh $orig_conf;
close $fh;

# --- a very large ring and a database that does not exist ----------------------

append_to_file($conf, "pgsentinel_ash.max_entries = 50000000\npgsentinel.db_name = 'no_such_database'\n");
$node->stop;
$log_off = -s $node->logfile;
my $started = $node->start(fail_ok => 1);
$log = substr(slurp_file($node->logfile), $log_off);
like($log, qr/pgsentinel requests \d+ MB of shared memory/, 'large ring: log gives the size');
like($log, qr/pgsentinel_ash\.max_entries = 50000000 rows of \d+ bytes/, 'large ring: log details the setting');
like($log, qr/HINT:.*lower pgsentinel_ash\.max_entries/, 'large ring: hint names the setting to lower');
if ($started)
{
	note 'the server allocated the 50000000-row ring';
	is(pgs_status($node, 'ash_capacity'), '50000000', 'large ring: capacity 50000000');
	cmp_ok(pgs_status($node, 'shmem_bytes'), '>', 50000000 * 100, 'large ring: shmem_bytes accounts for it');
	ok(pgs_wait_samples($node, 1), 'large ring: sampling works (db_name of a missing database does not stop it)');
	my $bg = pgs_start_bg($node, 'SELECT pg_sleep(600) /* bigring */');
	ok(pgs_wait_sessions($node, 1, '%bigring%'), 'large ring: a session sleeps');
	$node->safe_psql('postgres', "ALTER SYSTEM SET pgsentinel_ash.sampling_period = 0.01; SELECT pg_reload_conf()");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) >= 3 FROM pg_active_session_history WHERE query LIKE 'SELECT pg_sleep(600) /* bigring%'"),
		'large ring: the view reads its rows');
	like(pgs_status($node, 'diagnosis'), qr/^ok/, 'large ring: diagnosis ok');
	ok( $node->poll_query_until('postgres',
			"SELECT diagnosis ~ 'no_such_database.*pgsentinel\\.db_name' FROM pgsentinel_status()"),
		'diagnosis names the missing database and pgsentinel.db_name');
	pgs_stop_bg($bg);
	$node->stop;
}
else
{
	note 'the server refused to allocate the 50000000-row ring';
	like($log, qr/could not (map|create) (anonymous )?shared memory/, 'large ring: start failed for lack of shared memory');
}

done_testing();
