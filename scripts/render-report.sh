#!/usr/bin/env bash
# scripts/render-report.sh -- the HTML report of a real workload, as a person
# sees it: rendered to PNG by headless Chromium and checked.
#
#   scripts/render-report.sh --bindir PG_BINDIR --dir WORKDIR [--png FILE]
#                            [--hold SECONDS]
#
# Starts a throwaway server (PG_BINDIR, pgsentinel installed there) in
# WORKDIR, runs three sleepers, a CPU loop and a lock chain behind a
# transaction left idle, writes pgsentinel_report(..., 'html') to
# WORKDIR/report.html, checks its SVG (an area per wait class of the
# workload, the CPU line, nothing to fetch), renders it with Chromium
# (package chromium; scripts/test-all.sh installs it) and checks the PNG:
# not blank, and the colours of the CPU, Timeout and Lock areas present;
# then that the page fits a window 1,200 px wide (laid out by Chromium),
# its times are readable and its blocking tree drawn.
# --png copies the picture (docs/report.png is one, made with --hold 60).  Run as the user that
# owns WORKDIR, not root.  Prints one "ok"/"not ok" line per check and
# "render: N passed, N failed"; exits non-zero on any failure.

set -uo pipefail

BINDIR=
DIR=
PNG=
HOLD=0
while [ $# -gt 0 ]; do
	case $1 in
	--bindir) BINDIR=$2; shift 2 ;;
	--dir) DIR=$2; shift 2 ;;
	--png) PNG=$2; shift 2 ;;
	--hold) HOLD=$2; shift 2 ;;
	*) echo "unknown argument: $1" >&2; exit 2 ;;
	esac
done
[ -n "$BINDIR" ] && [ -n "$DIR" ] || { sed -n '2,6p' "$0"; exit 2; }
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
	{ echo "chromium is not installed (apt-get install chromium)" >&2; exit 2; }

PASS=0
FAIL=0
check() {
	if [ "$1" = 0 ]; then
		echo "ok - $2"; PASS=$((PASS + 1))
	else
		echo "not ok - $2"; FAIL=$((FAIL + 1))
	fi
}

rm -rf "$DIR/data" "$DIR/report.html" "$DIR/report.png" "$DIR/idle.fifo"
mkdir -p "$DIR"
PGDATA=$DIR/data
SOCK=$DIR
export PGHOST=$SOCK PGPORT=54329 PGDATABASE=postgres
PSQL=("$BINDIR/psql" -XAtq -v ON_ERROR_STOP=1)
BG=()

cleanup() {
	exec 3>&-
	[ ${#BG[@]} -eq 0 ] || kill "${BG[@]}" 2>/dev/null
	"$BINDIR/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1
}
trap cleanup EXIT

"$BINDIR/initdb" -D "$PGDATA" -A trust -U postgres >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log"; exit 1; }
cat >>"$PGDATA/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$SOCK'
port = $PGPORT
shared_preload_libraries = 'pg_stat_statements,pgsentinel'
pgsentinel_ash.sampling_period = 0.1
compute_query_id = auto
EOF
"$BINDIR/pg_ctl" -D "$PGDATA" -l "$DIR/server.log" -w start >/dev/null || { cat "$DIR/server.log"; exit 1; }
export PGUSER=postgres
"${PSQL[@]}" -c 'CREATE EXTENSION pg_stat_statements' -c 'CREATE EXTENSION pgsentinel' \
	-c 'CREATE TABLE rep_t (id int PRIMARY KEY, v int)' -c 'INSERT INTO rep_t VALUES (1, 0)' || exit 1

# Wait until the SQL condition $1 holds (60 s at most).
wait_for() {
	local i
	for i in $(seq 600); do
		[ "$("${PSQL[@]}" -c "SELECT ($1)")" = t ] && return 0
		sleep 0.1
	done
	return 1
}

SINCE=$("${PSQL[@]}" -c 'SELECT now()')
# the load comes in steps so that the picture has a shape: sleepers, then
# a CPU loop, then the lock chain behind an idle transaction
for i in 1 2 3; do
	"${PSQL[@]}" -c 'SELECT pg_sleep(600) /* render_sleep */' >/dev/null 2>&1 &
	BG+=($!)
done
wait_for "(SELECT count(*) FROM pgsentinel_ash('$SINCE', now()) WHERE wait_event = 'PgSleep') >= 60"
"${PSQL[@]}" -c 'DO $$BEGIN LOOP PERFORM 1; END LOOP; END$$ /* render_cpu */' >/dev/null 2>&1 &
BG+=($!)
wait_for "(SELECT count(*) FROM pgsentinel_ash('$SINCE', now()) WHERE wait_event_type = 'CPU') >= 30"
# the idle transaction: psql reads a FIFO kept open on fd 3 (closed by
# the cleanup, which ends it)
mkfifo "$DIR/idle.fifo"
"${PSQL[@]}" <"$DIR/idle.fifo" >/dev/null 2>&1 &
BG+=($!)
exec 3>"$DIR/idle.fifo"
echo 'BEGIN; UPDATE rep_t SET v = v + 1 WHERE id = 1;' >&3
wait_for "EXISTS (SELECT 1 FROM pg_stat_activity WHERE state = 'idle in transaction')"
for i in 2 3; do
	"${PSQL[@]}" -c "UPDATE rep_t SET v = v + $i WHERE id = 1 /* render_waiter */" >/dev/null 2>&1 &
	BG+=($!)
done
wait_for "(SELECT count(*) FROM pgsentinel_ash('$SINCE', now()) WHERE wait_event_type = 'Lock') >= 60"
check $? "the workload is in the history"
# (--hold N: N seconds more of the whole workload, for a picture)
[ "$HOLD" = 0 ] || sleep "$HOLD"

"${PSQL[@]}" -c "SELECT pgsentinel_report('$SINCE', now(), 'html', cpus => 2)" >"$DIR/report.html"
check $? "report written"
# (the idle root blocker is sampled, but is not load: no Client area)
for c in CPU Timeout Lock; do
	grep -q "<path class=\"series\" data-class=\"$c\"" "$DIR/report.html"
	check $? "the SVG has the $c area"
done
grep -q '<line class="cpus"' "$DIR/report.html"
check $? "the SVG has the CPU line"
! grep -Eqi '(src=|href=|url\(|<script)' "$DIR/report.html"
check $? "the page fetches nothing"
! grep -q '<path class="series" data-class="Client"' "$DIR/report.html"
check $? "the idle root blocker is not load (no Client area)"
grep -Eq '<rect class="tip"[^>]*><title>[0-9:]+: [0-9.]+ active sessions \(' "$DIR/report.html"
check $? "the chart has a tooltip per bucket"
[ "$(grep -o '<div class="panel" id="panel-[a-z_]*"><svg ' "$DIR/report.html" | wc -l)" = 4 ]
check $? "the load sliced by wait class, SQL, application and role"
# the axes at round values (a step of 1, 2 or 5 times a power of ten from
# 0) and round times (a usual step, every label on a multiple of it)
python3 - "$DIR/report.html" <<'EOF'
import re, sys
from decimal import Decimal
html = open(sys.argv[1]).read()
# the chart shown first (by wait class); the slices are drawn alike
html = re.search(r'id="panel-wait_class">(.*?)</div>', html, re.S).group(1)
ys = [Decimal(v) for v in re.findall(r'class="ax" text-anchor="end">([0-9.]+)</text>', html)]
ts = re.findall(r'class="ax" text-anchor="middle">(\d\d):(\d\d):(\d\d)</text>', html)
assert len(ys) >= 2 and ys[0] == 0, ys
step = ys[1] - ys[0]
assert all(b - a == step for a, b in zip(ys, ys[1:])), ys
mant = step.scaleb(-step.adjusted()).normalize()
assert mant in (1, 2, 5), (step, mant)
secs = [int(h) * 3600 + int(m) * 60 + int(s) for h, m, s in ts]
assert len(secs) >= 2, ts
tstep = min(b - a for a, b in zip(secs, secs[1:]))
assert tstep in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600), tstep
assert all(x % tstep == 0 for x in secs), (secs, tstep)
print("# y axis %s, time axis every %s s" % (' '.join(map(str, ys)), tstep))
EOF
check $? "the axes are labelled at round values and times"

# headless Chromium: no sandbox (containers), no GPU, its profile in DIR
HOME=$DIR timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--user-data-dir="$DIR/chromium-profile" --window-size=1200,1500 \
	--screenshot="$DIR/report.png" "file://$DIR/report.html" >"$DIR/chromium.log" 2>&1
[ -s "$DIR/report.png" ]
check $? "Chromium rendered the page to PNG"

# The picture: decoded here (no imaging library needed), then counted.
python3 - "$DIR/report.png" <<'EOF'
import struct, sys, zlib

def pixels(path):
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    pos, idat = 8, b''
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6), (depth, ctype)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    out = []
    i = 0
    for _ in range(h):
        f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append(line); prev = line
    return w, h, bpp, out

w, h, bpp, rows = pixels(sys.argv[1])
count = {}
for line in rows:
    for x in range(0, len(line), bpp):
        px = bytes(line[x:x + 3])
        count[px] = count.get(px, 0) + 1
total = w * h
white = count.get(b'\xff\xff\xff', 0)
ok = True
def report(cond, what):
    global ok
    print(('ok - ' if cond else 'not ok - ') + what)
    ok = ok and cond
report(white < 0.97 * total, 'the picture is not blank (%.1f%% white)' % (100.0 * white / total))
report(len(count) >= 8, '%d distinct colours' % len(count))
for name, rgb in (('CPU', '2ca02c'), ('Timeout', '9467bd'), ('Lock', 'd62728')):
    n = count.get(bytes.fromhex(rgb), 0)
    report(n >= 200, 'the %s area is drawn (%d pixels of #%s)' % (name, n, rgb))
sys.exit(0 if ok else 1)
EOF
rc=$?
check $rc "the PNG shows the chart"

# The page fits a window 1,200 px wide: laid out by Chromium with a
# script added that records how wide the page is and what sticks out.
python3 - "$DIR/report.html" "$DIR/width.html" <<'EOF'
import sys
page = open(sys.argv[1]).read()
probe = ('<script>window.addEventListener("load", function () {'
         ' var d = document.documentElement, out = [];'
         ' document.querySelectorAll("body *").forEach(function (e) {'
         '  var r = e.getBoundingClientRect();'
         '  if (r.right > d.clientWidth + 1) out.push(e.tagName + ":" + Math.round(r.right)); });'
         ' document.body.setAttribute("data-width", d.scrollWidth + " " + d.clientWidth + " " + out.slice(0, 5).join(","));'
         '});</script>')
open(sys.argv[2], 'w').write(page.replace('</body>', probe + '</body>'))
EOF
HOME=$DIR timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--user-data-dir="$DIR/chromium-profile" --window-size=1200,1500 --virtual-time-budget=5000 \
	--dump-dom "file://$DIR/width.html" 2>>"$DIR/chromium.log" |
	grep -o 'data-width="[^"]*"' >"$DIR/width.txt"
read -r scroll client rest < <(sed 's/data-width="\(.*\)"/\1/' "$DIR/width.txt")
echo "# page ${scroll:-?} px wide in a window of ${client:-?} px${rest:+; past its edge: $rest}"
[ -n "$scroll" ] && [ "$scroll" -le "$client" ]
check $? "the page fits a window 1,200 px wide"

# Times readable (no ISO form in the text outside the chart), trees drawn.
python3 - "$DIR/report.html" <<'EOF'
import re, sys
html = open(sys.argv[1]).read()
text = re.sub(r'<[^>]*>', ' ', re.sub(r'<svg.*?</svg>', ' ', html, flags=re.S))
iso = re.findall(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d', text)
assert not iso, iso[:3]
assert '&#9492;&#9472;&#9472; ' in html and '`--' not in html, 'the blocking tree is not drawn'
EOF
check $? "times are readable and the blocking tree is drawn"

if [ -n "$PNG" ] && [ -s "$DIR/report.png" ]; then
	cp "$DIR/report.png" "$PNG"
fi
echo "render: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
