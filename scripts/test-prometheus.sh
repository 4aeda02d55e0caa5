#!/usr/bin/env bash
# scripts/test-prometheus.sh -- prometheus/pgsentinel-queries.yaml in a real
# prometheus-postgres-exporter against a real server, after a known workload.
#
#   scripts/test-prometheus.sh [PG_CONFIG]
#
# PG_CONFIG: a PostgreSQL 15 with pgsentinel installed (default: the private
# copy scripts/test-all.sh --private-install made under build/, else the
# system's).  As root, prometheus-postgres-exporter is installed when
# missing (apt) and the servers run as the unprivileged user.
#
# A throwaway cluster on a free port of 127.0.0.1 (own socket directory)
# preloads pgsentinel, sampling every 0.5 s; in database pgs_prom_work three
# sessions sleep (wait event Timeout/PgSleep) and one spins on CPU.  Once
# they have been sampled for more than a minute (polled), the exporter
# (--extend.query-path=the queries file, default and settings metrics off)
# listens on another free loopback port, and /metrics is scraped with curl.
# Tests (one line "ok: ..." or "FAILED: ..." each, then "N passed, N failed"):
#   1. the exporter loaded the file and scraped without error (pg_up 1);
#   2. pgsentinel_wait_class_aas: every wait class, Timeout ~3, CPU ~1;
#   3. pgsentinel_database_aas: pgs_prom_work ~4, postgres present;
#   4. pgsentinel_top_statement_aas: at most 5, the sleep's query id first
#      (~3), the spin's (~1) next;
#   5. pgsentinel_status_*: the sampler's health matches pgsentinel_status();
#   6. pgsentinel_pgssh_state: every state, only "ok" at 1;
#   7. the metrics docs/prometheus.md lists and the pgsentinel metrics scraped
#      are the same, each with the labels documented.
# "~N" is N +/- 25 %: the sampler may miss samples on a busy machine.

set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUERIES=$PGS_REPO/prometheus/pgsentinel-queries.yaml
DOC=$PGS_REPO/docs/prometheus.md
EXPORTER=/usr/bin/prometheus-postgres-exporter
PG_CONFIG=${1:-}
if [ -z "$PG_CONFIG" ]; then
	PG_CONFIG=$PGS_BUILD_ROOT/pg15-install$PGS_PG15_CONFIG
	[ -x "$PG_CONFIG" ] || PG_CONFIG=$PGS_PG15_CONFIG
fi
PGBIN=$("$PG_CONFIG" --bindir) || pgs_die "no PostgreSQL at $PG_CONFIG"
[ -f "$("$PG_CONFIG" --pkglibdir)/pgsentinel.so" ] ||
	pgs_die "pgsentinel is not installed in $("$PG_CONFIG" --pkglibdir): run make install (or scripts/test-all.sh) first"

PASS=0
FAIL=0
ok() { echo "ok: $*"; PASS=$((PASS + 1)); }
failed() { echo "FAILED: $*"; FAIL=$((FAIL + 1)); }

if [ ! -x "$EXPORTER" ]; then
	pgs_is_root || pgs_die "prometheus-postgres-exporter is missing; as root: apt-get install prometheus-postgres-exporter"
	pgs_apt_install prometheus-postgres-exporter
fi
pgs_setup_user

TMP=$(mktemp -d /tmp/pgsentinel-prom.XXXXXX)
chmod 755 "$TMP"
DATA=$TMP/data
SOCK=$TMP/sock
mkdir -p "$SOCK"
pgs_give_to_user "$TMP"
EXPORTER_PID=
EXPORTER_WAIT=
WORKLOAD_PIDS=()

cleanup() {
	[ -n "$EXPORTER_PID" ] && kill "$EXPORTER_PID" 2>/dev/null
	if [ -f "$DATA/postmaster.pid" ]; then
		pgs_as_user_in "$TMP" "$PGBIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1
	fi
	[ ${#WORKLOAD_PIDS[@]} -eq 0 ] || wait "${WORKLOAD_PIDS[@]}" 2>/dev/null
	[ -n "$EXPORTER_WAIT" ] && wait "$EXPORTER_WAIT" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
finish() {
	echo "$PASS passed, $FAIL failed"
	[ "$FAIL" = 0 ]
	exit $?
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
psql_u() { pgs_as_user_in "$TMP" "$PGBIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$port" -U postgres "$@"; }

# --- the server and the workload ----------------------------------------------

pgs_log "server: $("$PG_CONFIG" --version), 127.0.0.1:$port"
pgs_as_user_in "$TMP" "$PGBIN/initdb" -D "$DATA" -A trust -U postgres --no-sync >"$TMP/initdb.log" 2>&1 ||
	{ cat "$TMP/initdb.log"; pgs_die "initdb failed"; }
cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$SOCK'
shared_preload_libraries = 'pg_stat_statements,pgsentinel'
pgsentinel_ash.sampling_period = 0.5
compute_query_id = on
EOF
pgs_as_user_in "$TMP" "$PGBIN/pg_ctl" -D "$DATA" -l "$TMP/server.log" -w -t 60 start >/dev/null ||
	{ tail -20 "$TMP/server.log"; pgs_die "the server did not start"; }
psql_u -d postgres -c 'CREATE EXTENSION pg_stat_statements' -c 'CREATE EXTENSION pgsentinel' \
	-c 'CREATE DATABASE pgs_prom_work' >/dev/null || pgs_die "CREATE EXTENSION failed"

for i in 1 2 3; do
	pgs_as_user_in "$TMP" env PGAPPNAME=pgs_prom_sleep "$PGBIN/psql" -X -q -h "$SOCK" -p "$port" -U postgres \
		-d pgs_prom_work -c 'SELECT pg_sleep(900)' >/dev/null 2>&1 &
	WORKLOAD_PIDS+=($!)
done
pgs_as_user_in "$TMP" env PGAPPNAME=pgs_prom_cpu "$PGBIN/psql" -X -q -h "$SOCK" -p "$port" -U postgres \
	-d pgs_prom_work -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp();
		BEGIN WHILE clock_timestamp() < t0 + interval '15 minutes' LOOP END LOOP; END \$\$" >/dev/null 2>&1 &
WORKLOAD_PIDS+=($!)

# Wait until the four sessions were first sampled more than 61 s ago: the
# last minute is then covered by the workload.
pgs_log "workload: 3 sessions in pg_sleep(), 1 spinning; waiting until sampled for a minute"
covered=
for _ in $(seq 360); do
	covered=$(psql_u -d postgres -c "
		SELECT count(DISTINCT pid) = 4 AND min(ash_time) < now() - interval '61 seconds'
		FROM pg_active_session_history WHERE application_name IN ('pgs_prom_sleep', 'pgs_prom_cpu')")
	[ "$covered" = t ] && break
	sleep 0.5
done
[ "$covered" = t ] || { failed "the workload was not sampled for a minute within 180 s"; finish; }

sleep_qid=$(psql_u -d postgres -c "SELECT queryid FROM pg_active_session_history
	WHERE application_name = 'pgs_prom_sleep' AND queryid IS NOT NULL ORDER BY sample_id DESC LIMIT 1")
cpu_qid=$(psql_u -d postgres -c "SELECT queryid FROM pg_active_session_history
	WHERE application_name = 'pgs_prom_cpu' AND queryid IS NOT NULL ORDER BY sample_id DESC LIMIT 1")
samples_before=$(psql_u -d postgres -c 'SELECT samples_taken FROM pgsentinel_status()')
capacity=$(psql_u -d postgres -c 'SELECT ash_capacity FROM pgsentinel_status()')

# --- the exporter ---------------------------------------------------------------

eport=$(free_port)
pgs_log "exporter: $("$EXPORTER" --version 2>&1 | head -1), 127.0.0.1:$eport"
# runuser does not pass a SIGTERM on to its child: the exporter writes its
# own pid (sh execs it), which cleanup() stops.
pgs_as_user_in "$TMP" env DATA_SOURCE_NAME="host=$SOCK port=$port user=postgres dbname=postgres sslmode=disable" \
	sh -c 'echo $$ >"$1"; shift; exec "$@"' exporter "$TMP/exporter.pid" \
	"$EXPORTER" --web.listen-address="127.0.0.1:$eport" --extend.query-path="$QUERIES" \
	--disable-default-metrics --disable-settings-metrics --log.level=warn >"$TMP/exporter.log" 2>&1 &
EXPORTER_WAIT=$!
for _ in $(seq 100); do
	[ -s "$TMP/exporter.pid" ] && break
	sleep 0.1
done
EXPORTER_PID=$(cat "$TMP/exporter.pid" 2>/dev/null)
scraped=
for _ in $(seq 120); do
	if curl -sf "http://127.0.0.1:$eport/metrics" -o "$TMP/metrics.txt" && grep -q '^pgsentinel_' "$TMP/metrics.txt"; then
		scraped=1
		break
	fi
	kill -0 "$EXPORTER_WAIT" 2>/dev/null || break
	sleep 0.5
done
if [ -z "$scraped" ]; then
	failed "no pgsentinel metric from the exporter within 60 s; its log:"
	cat "$TMP/exporter.log"
	finish
fi
pgs_log "scraped $(grep -c '^pgsentinel_' "$TMP/metrics.txt") pgsentinel series"
grep '^pgsentinel_' "$TMP/metrics.txt"

# --- the checks -------------------------------------------------------------------

# Each check is a Python function over the parsed scrape; it prints
# "ok: ..." or "FAILED: ...".
python3 - "$TMP/metrics.txt" "$DOC" "$sleep_qid" "$cpu_qid" "$samples_before" "$capacity" >"$TMP/checks.txt" 2>&1 <<'EOF'
import math, re, sys

metrics_path, doc_path, sleep_qid, cpu_qid, samples_before, capacity = sys.argv[1:]
series = []          # (name, {labels}, value)
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
for line in open(metrics_path):
    if line.startswith('#') or not line.strip():
        continue
    m = line_re.match(line.strip())
    if m:
        series.append((m.group(1), dict(label_re.findall(m.group(2) or '')), float(m.group(3))))

def get(name, **labels):
    return [s for s in series if s[0] == name and all(s[1].get(k) == v for k, v in labels.items())]

def one(name, **labels):
    found = get(name, **labels)
    return found[0][2] if len(found) == 1 else None

def near(value, want, tol=0.25):
    return value is not None and abs(value - want) <= want * tol

def report(good, what, detail=''):
    print(('ok: ' if good else 'FAILED: ') + what + (' (%s)' % detail if detail else ''))

# 1. the exporter
load_err = [s for s in series if s[0] == 'pg_exporter_user_queries_load_error']
report(one('pg_up') == 1 and one('pg_exporter_last_scrape_error') == 0
       and load_err and all(s[2] == 0 for s in load_err),
       'exporter: queries file loaded, pg_up 1, no scrape error',
       'pg_up=%s last_scrape_error=%s load_error=%s' % (one('pg_up'), one('pg_exporter_last_scrape_error'),
                                                      [s[2] for s in load_err]))

# 2. wait classes
classes = {s[1].get('wait_class'): s[2] for s in get('pgsentinel_wait_class_aas')}
wanted = {'CPU', 'Activity', 'BufferPin', 'Client', 'Extension', 'IO', 'IPC', 'Lock', 'LWLock', 'Timeout'}
report(wanted <= set(classes) and near(classes.get('Timeout'), 3) and near(classes.get('CPU'), 1, 0.6)
       and all(v >= 0 for v in classes.values()),
       'pgsentinel_wait_class_aas: %d classes, Timeout ~3, CPU ~1' % len(classes),
       ', '.join('%s=%.2f' % kv for kv in sorted(classes.items())))

# 3. databases
dbs = {s[1].get('datname'): s[2] for s in get('pgsentinel_database_aas')}
report(near(dbs.get('pgs_prom_work'), 4) and 'postgres' in dbs and dbs['postgres'] < 1,
       'pgsentinel_database_aas: pgs_prom_work ~4, postgres present',
       ', '.join('%s=%.2f' % kv for kv in sorted(dbs.items())))

# 4. top statements
top = sorted(((s[2], s[1].get('queryid')) for s in get('pgsentinel_top_statement_aas')), reverse=True)
report(0 < len(top) <= 5 and top[0][1] == sleep_qid and near(top[0][0], 3)
       and len(top) > 1 and top[1][1] == cpu_qid and near(top[1][0], 1, 0.6),
       'pgsentinel_top_statement_aas: %d statements, pg_sleep first ~3, the spin next ~1' % len(top),
       ', '.join('%s=%.2f' % (q, v) for v, q in top))

# 5. sampler health
st = {s[0][len('pgsentinel_status_'):]: s[2] for s in series if s[0].startswith('pgsentinel_status_')}
age = st.get('last_sample_age_seconds')
good = (st.get('sampler_up') == 1 and st.get('samples_taken', 0) >= float(samples_before) > 0
        and age is not None and not math.isnan(age) and 0 <= age < 10
        and st.get('sampling_period_seconds') == 0.5 and st.get('ash_rows', 0) > 0
        and st.get('ash_capacity') == float(capacity) and st.get('texts_dropped') == 0
        and st.get('sample_overruns', -1) >= 0 and st.get('diagnosis_ok') == 1)
report(good, 'pgsentinel_status_*: sampler up, %d samples, last %.2f s ago, period 0.5 s'
       % (st.get('samples_taken', 0), age if age is not None else -1),
       ', '.join('%s=%s' % kv for kv in sorted(st.items())))

# 6. statements history state
states = {s[1].get('state'): s[2] for s in get('pgsentinel_pgssh_state')}
report(len(states) == 8 and states.get('ok') == 1 and sum(states.values()) == 1,
       'pgsentinel_pgssh_state: %d states, "ok" is 1' % len(states),
       ', '.join('%s=%g' % kv for kv in sorted(states.items())))

# 7. docs/prometheus.md lists each metric as "| `name{labels}` |" or "| `name` |".
doc = {}
for m in re.finditer(r'^\|\s*`(pgsentinel_[a-z_]+)(?:\{([a-z_, ]*)\})?`', open(doc_path).read(), re.M):
    doc[m.group(1)] = set(l.strip() for l in (m.group(2) or '').split(',') if l.strip())
scraped = {}
for name, labels, _ in series:
    if name.startswith('pgsentinel_'):
        scraped.setdefault(name, set()).update(set(labels) - {'server'})
report(doc and doc == scraped,
       'docs/prometheus.md lists the %d pgsentinel metrics scraped, with their labels' % len(scraped),
       'only in the doc: %s; only scraped: %s' % (
           sorted(f'{k}{sorted(v)}' for k, v in doc.items() if scraped.get(k) != v),
           sorted(f'{k}{sorted(v)}' for k, v in scraped.items() if doc.get(k) != v)))
EOF
cat "$TMP/checks.txt"
PASS=$((PASS + $(grep -c '^ok: ' "$TMP/checks.txt")))
FAIL=$((FAIL + $(grep -c '^FAILED: ' "$TMP/checks.txt")))
[ "$(grep -cE '^(ok|FAILED): ' "$TMP/checks.txt")" = 7 ] || failed "the checks did not all run"
if [ "$FAIL" != 0 ]; then
	echo "---- exporter log ----"
	cat "$TMP/exporter.log"
fi
finish
