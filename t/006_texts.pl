
# Reliability 6: long and odd query texts.  With track_activity_query_size =
# 1024, texts longer than that are cut by core at 1023 bytes, possibly in the
# middle of a multibyte character; the history must show a valid UTF-8 prefix
# of the real text (as pg_stat_activity does).  Control bytes come back as
# they were sent.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use Encode qw(decode encode);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgsTest;

my $node = pgs_node('texts',
	init_opts => { extra => [ '--encoding=UTF8', '--locale=C' ] },
	conf => "track_activity_query_size = 1024\n");
is($node->safe_psql('postgres', 'SHOW server_encoding'), 'UTF8', 'UTF8 database');

# Start $sql in the background, wait for its rows, return its pid.
sub sampled
{
	my ($sql, $tag) = @_;
	my $h = pgs_start_bg($node, $sql);
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%$tag%' AND wait_event = 'PgSleep'"),
		"$tag: running");
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE query LIKE '%$tag%' AND wait_event = 'PgSleep'");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) >= 2 FROM pg_active_session_history WHERE pid = $pid AND wait_event = 'PgSleep'"),
		"$tag: sampled");
	return ($h, $pid);
}

# One column of the newest row of pid, as hex of its UTF-8 bytes (so that
# psql output cannot alter it).
sub hexcol
{
	my ($pid, $col) = @_;
	return $node->safe_psql('postgres',
		"SELECT encode(convert_to($col, 'UTF8'), 'hex') FROM pg_active_session_history WHERE pid = $pid AND wait_event = 'PgSleep' ORDER BY sample_id DESC LIMIT 1");
}

# --- long texts cut inside a multibyte character ----------------------------

# 'é' is 2 bytes, '€' 3, '😀' 4: the prefixes are chosen so that byte 1023
# falls inside a character, except for e-acute-no-split.
my @cases = (
	[ 'e-acute', "\x{e9}", 2000, "SELECT pg_sleep(600) /* longtext1 */,  '" ],
	[ 'e-acute-no-split', "\x{e9}", 2000, "SELECT pg_sleep(600) /* longtext5 */, '" ],
	[ 'emoji', "\x{1F600}", 600, "SELECT pg_sleep(600) /* longtext2 */ , '" ],
	[ 'three-byte', "\x{20AC}", 700, "SELECT pg_sleep(600) /* longtext3 */,  '" ],
);
foreach my $c (@cases)
{
	my ($name, $ch, $n, $prefix) = @$c;
	my $full = $prefix . ($ch x $n) . "' AS x";
	my $full_bytes = encode('UTF-8', $full);
	my ($tag) = $prefix =~ /(longtext\d)/;
	cmp_ok(length($full_bytes), '>', 1024, "$name: statement is longer than 1024 bytes");
	my ($h, $pid) = sampled(encode('UTF-8', $full), $tag);

	my $hex = hexcol($pid, 'top_level_query');
	my $bytes = pack('H*', $hex);
	cmp_ok(length($bytes), '<=', 1023, "$name: top_level_query at most 1023 bytes (" . length($bytes) . ")");
	cmp_ok(length($bytes), '>=', 1020, "$name: top_level_query not cut shorter than needed");
	my $decoded = eval { decode('UTF-8', $bytes, Encode::FB_CROAK | Encode::LEAVE_SRC) };
	ok(defined $decoded, "$name: top_level_query is valid UTF-8");
	is(substr($full_bytes, 0, length($bytes)), $bytes, "$name: top_level_query is a prefix of the statement");
	unlike($bytes, qr/\xEF\xBF\xBD/, "$name: no replacement character");
	is($hex, $node->safe_psql('postgres',
			"SELECT encode(convert_to(query, 'UTF8'), 'hex') FROM pg_stat_activity WHERE pid = $pid"),
		"$name: same text as pg_stat_activity.query");
	is($node->psql('postgres',
			"SELECT count(convert_from(convert_to(top_level_query, 'UTF8'), 'UTF8')) FROM pg_active_session_history WHERE pid = $pid"),
		0, "$name: server-side UTF-8 verification of the text passes");
	is(hexcol($pid, 'query'), $hex, "$name: query equals top_level_query at top level");
	pgs_stop_bg($h);
}

# --- the nested statement of a function, cut the same way ------------------

my $inner = "'" . ("\x{e9}" x 1500) . "'";
$node->safe_psql('postgres', encode('UTF-8',
	"CREATE FUNCTION nested_long() RETURNS void LANGUAGE plpgsql AS \$f\$ BEGIN PERFORM pg_sleep(600),  $inner; END \$f\$"));
my ($h, $pid) = sampled('SELECT nested_long() /* longtext4 */', 'longtext4');
my $qb = pack('H*', hexcol($pid, 'query'));
cmp_ok(length($qb), '<=', 1023, 'nested: query at most 1023 bytes (' . length($qb) . ')');
cmp_ok(length($qb), '>=', 1020, 'nested: query not cut shorter than needed');
ok(defined(eval { decode('UTF-8', $qb, Encode::FB_CROAK | Encode::LEAVE_SRC) }), 'nested: query is valid UTF-8');
like(decode('UTF-8', $qb), qr/^SELECT pg_sleep\(600\),  '\x{e9}+$/, 'nested: query is the inner statement');
is(pack('H*', hexcol($pid, 'top_level_query')), 'SELECT nested_long() /* longtext4 */',
	'nested: top_level_query is the call');
pgs_stop_bg($h);

# --- odd bytes: tab, newline, carriage return, \x01, quotes, backslash -------

my $odd = "SELECT pg_sleep(600) /* oddtext */, 'a\tb\x01c\nd\re\\f''g\x7fh' AS \"we\tird\"";
($h, $pid) = sampled($odd, 'oddtext');
is(pack('H*', hexcol($pid, 'top_level_query')), $odd,
	'odd bytes: top_level_query byte for byte as sent');
is(pack('H*', hexcol($pid, 'query')), $odd, 'odd bytes: query byte for byte as sent');
pgs_stop_bg($h);

# short multibyte text in every script, exact
my $mb = encode('UTF-8', "SELECT pg_sleep(600) /* mbtext */, '\x{e9}\x{20AC}\x{1F600}\x{65e5}\x{672c}' AS \x{540d}");
($h, $pid) = sampled($mb, 'mbtext');
is(pack('H*', hexcol($pid, 'top_level_query')), $mb, 'short multibyte text exact');
pgs_stop_bg($h);

unlike(slurp_file($node->logfile), qr/invalid byte sequence|PANIC|terminated by signal/,
	'no encoding error or crash in the log');
$node->stop;

# --- texts too big for the text area ------------------------------------------

# track_activity_query_size at its maximum (1 MB) with the smallest text area
# (64 kB): a 20 kB and a 200 kB statement.
my $small = pgs_node('smallarea',
	conf => "pgsentinel_ash.text_area_size = 64\ntrack_activity_query_size = 1048576\n");
$node = $small;
foreach my $size (20_000, 200_000)
{
	my $tag = "bigtext$size";
	my $sql = "SELECT pg_sleep(600) /* $tag */, '" . ('z' x $size) . "' AS z";
	my ($hb, $pidb) = sampled($sql, $tag);
	my $r = $small->safe_psql('postgres',
		"SELECT count(*), count(top_level_query), max(octet_length(top_level_query)), bool_and(application_name IS NOT NULL AND wait_event = 'PgSleep') FROM pg_active_session_history WHERE pid = $pidb AND wait_event = 'PgSleep'");
	my ($n, $ntext, $len, $others) = split /\|/, $r;
	cmp_ok($n, '>=', 2, "$size-byte statement: sampled ($n rows)");
	is($others, 't', "$size-byte statement: its other columns are there");
	my $lost = $small->safe_psql('postgres',
		"SELECT texts_dropped > 0 OR diagnosis ~ 'text' FROM pgsentinel_status()");
	note "$size-byte statement: $ntext of $n rows have a text (longest " . ($len || 0)
	  . " bytes); loss reported: $lost";
	# a text longer than a quarter of the text area is not stored, but
	# counted in texts_dropped, which the diagnosis reports
	ok($ntext > 0 || $lost eq 't',
		"$size-byte statement: text kept, or its loss reported by pgsentinel_status()");
	pgs_stop_bg($hb);
}
is($small->safe_psql('postgres', 'SELECT 1'), '1', 'server up after oversized texts');
unlike(slurp_file($small->logfile), qr/PANIC|terminated by signal/, 'no crash with oversized texts');
$small->stop;
done_testing();
