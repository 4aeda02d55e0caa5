#!/usr/bin/env bash
# scripts/demo.sh -- pgsentinel end to end on a throwaway PostgreSQL server.
#
#   scripts/demo.sh [--pg 15|18] [--port N] [--seconds N] [--private-install]
#
# Installs what is missing (as root; see scripts/provision.sh), builds and
# installs the extension, starts a throwaway server (initdb in a temporary
# directory, own port and own socket directory, no TCP), samples every 0.1 s,
# runs a ~10 s workload, then prints what the history shows:
#   - pgsentinel_status()
#   - pgsentinel_report() of the window: load, waits, top SQL, blocking
#     trees, incidents (and its HTML version, written to
#     $PGSENTINEL_DEMO_HTML, default /tmp/pgsentinel-demo-report.html)
#   - pgsentinel_blocking_trees() and pgsentinel_top_statements()
# The workload, one session each (application_name says which):
#   demo_cpu      sum over generate_series in a loop          -> CPU
#   demo_sleep    pg_sleep(0.5) in a loop                      -> Timeout/PgSleep
#   demo_nested   a PL/pgSQL function running a nested query   -> query <> top_level_query
#   demo_holder   updates a row and sleeps 8 s in its transaction
#   demo_waiter1  updates the same row                         -> Lock/transactionid
#   demo_waiter2  updates the same row                         -> Lock/tuple
# The server and the temporary directory are removed on exit.  As root, the
# server and psql run as $PGSENTINEL_TEST_USER (default pgsentinel_test).
# Exits non-zero when the history lacks CPU, PgSleep or Lock rows.

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

V=15
PORT=55499
SECS=10
while [ $# -gt 0 ]; do
	case $1 in
	--pg) V=$2; shift 2 ;;
	--pg=*) V=${1#--pg=}; shift ;;
	--port) PORT=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--private-install) export PGSENTINEL_PRIVATE_INSTALL=1; shift ;;
	-h | --help) sed -n '2,4p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) pgs_die "unknown argument: $1 (see --help)" ;;
	esac
done

pgs_ensure_deps "$V" ""
pgs_setup_user
pgs_prepare_build_root
PGC=$(pgs_target_pg_config "$V")
pgs_lock_install "$PGC"
build_log=$PGS_BUILD_ROOT/demo-build.log
if ! pgs_build_install "$V" "$PGC" >"$build_log" 2>&1; then
	cat "$build_log"
	pgs_die "build or install failed"
fi
pgs_unlock_install
BINDIR=$("$PGC" --bindir)

TMP=$(mktemp -d /tmp/pgsentinel-demo.XXXXXX)
chmod 755 "$TMP"
pgs_give_to_user "$TMP"
DATA=$TMP/data

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	# Our own background workload sessions, if interrupted.
	local j
	for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
	if [ -f "$DATA/postmaster.pid" ]; then
		as_user "$BINDIR/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >/dev/null 2>&1 ||
			as_user "$BINDIR/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

as_user() { pgs_as_user_in "$TMP" "$@"; }
# psql on the demo server; quiet, stop at the first error.
dpsql() {
	as_user env PGAPPNAME="${APP:-demo_report}" "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 \
		-h "$TMP" -p "$PORT" -U postgres -d postgres "$@"
}

pgs_log "initdb in $DATA ($("$BINDIR/postgres" --version))"
as_user "$BINDIR/initdb" -D "$DATA" -U postgres --auth=trust --no-locale -E UTF8 --no-sync >/dev/null
cat >>"$DATA/postgresql.conf" <<EOF

# pgsentinel demo
port = $PORT
listen_addresses = ''
unix_socket_directories = '$TMP'
shared_preload_libraries = 'pg_stat_statements,pgsentinel'
pgsentinel_ash.sampling_period = 0.1
compute_query_id = on
max_connections = 30
EOF
pgs_log "starting the server (port $PORT, socket directory $TMP)"
as_user "$BINDIR/pg_ctl" -D "$DATA" -l "$TMP/server.log" -w -t 60 start >/dev/null ||
	{ cat "$TMP/server.log"; pgs_die "the server did not start"; }

dpsql <<'SQL'
CREATE EXTENSION pg_stat_statements;
CREATE EXTENSION pgsentinel;
CREATE TABLE demo_accounts (id int PRIMARY KEY, balance numeric NOT NULL);
INSERT INTO demo_accounts SELECT i, 100 FROM generate_series(1, 1000) AS i;
-- A function whose own statements are what actually runs: ASH shows the
-- caller in top_level_query and the statement inside in query.
CREATE FUNCTION demo_balance_report(n int) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
    total numeric;
BEGIN
    SELECT sum(a.balance * g) INTO total
      FROM demo_accounts AS a CROSS JOIN generate_series(1, n) AS g;
    PERFORM pg_sleep(0.05);
    RETURN total;
END $$;
SQL

cat >"$TMP/cpu.sql" <<'SQL'
SELECT sum(i) FROM generate_series(1, 2000000) AS i;
SQL
cat >"$TMP/sleep.sql" <<'SQL'
SELECT pg_sleep(0.5);
SQL
cat >"$TMP/nested.sql" <<'SQL'
SELECT demo_balance_report(300);
SQL
hold=$((SECS > 4 ? SECS - 2 : 2))
pgs_log "running the workload for $SECS s (sampling every 0.1 s)"
START_TS=$(dpsql -At -c "SELECT now()")
for w in cpu sleep nested; do
	as_user env PGAPPNAME="demo_$w" "$BINDIR/pgbench" -n -c 1 -T "$SECS" -f "$TMP/$w.sql" \
		-h "$TMP" -p "$PORT" -U postgres postgres >"$TMP/pgbench_$w.out" 2>&1 &
done
APP=demo_holder dpsql -c "BEGIN" \
	-c "UPDATE demo_accounts SET balance = balance - 1 WHERE id = 1" \
	-c "SELECT pg_sleep($hold)" -c "COMMIT" >/dev/null &
sleep 1
APP=demo_waiter1 dpsql -c "UPDATE demo_accounts SET balance = balance + 1 WHERE id = 1" >/dev/null &
sleep 0.5
APP=demo_waiter2 dpsql -c "UPDATE demo_accounts SET balance = balance + 2 WHERE id = 1" >/dev/null &
wait

END_TS=$(dpsql -At -c "SELECT now()")

# Every report looks at the workload's window only.
W="ash_time BETWEEN '$START_TS' AND '$END_TS'"
report() {
	printf '\n==== %s ====\n' "$1"
	shift
	dpsql -P pager=off "$@"
}

report "pgsentinel_status()" -c "SELECT archive_state, diagnosis FROM pgsentinel_status()"

# What a DBA asks first: the report of the window (load, waits, top SQL,
# blocking trees, incidents), then two of its answers on their own.
R="'$START_TS'::timestamptz, '$END_TS'::timestamptz"
report "pgsentinel_report() of the $SECS s window" -At -c "SELECT pgsentinel_report($R)"
report "Who blocked whom: pgsentinel_blocking_trees()" -c "
SELECT repeat('  ', depth) || pid AS tree, application_name AS app, state, wait_event,
       sessions, round(db_time::numeric, 1) AS db_time, left(query, 50) AS query
  FROM pgsentinel_blocking_trees($R)"
report "Top SQL: pgsentinel_top_statements()" -c "
SELECT rank, round(db_time::numeric, 2) AS db_time, round(pct::numeric, 1) AS pct,
       wait_profile, round(calls_per_s::numeric, 1) AS calls_per_s,
       left(regexp_replace(query, '\\s+', ' ', 'g'), 50) AS query
  FROM pgsentinel_top_statements($R, 5)"
HTML=${PGSENTINEL_DEMO_HTML:-/tmp/pgsentinel-demo-report.html}
dpsql -At -c "SELECT pgsentinel_report($R, 'html')" -o "$TMP/report.html"
cp "$TMP/report.html" "$HTML"
printf '\nThe same report as HTML: %s (open it in a browser)\n' "$HTML"

# What the demo must show; anything missing is a failure of the product.
read -r cpu sleep lock blocked < <(dpsql -At -F ' ' -c "
SELECT count(*) FILTER (WHERE wait_event_type = 'CPU' AND wait_event = 'CPU'),
       count(*) FILTER (WHERE wait_event = 'PgSleep'),
       count(*) FILTER (WHERE wait_event_type = 'Lock'),
       count(*) FILTER (WHERE blockers > 0 AND blockerpid IS NOT NULL)
  FROM pg_active_session_history WHERE $W")
echo
problems=$(grep -E 'ERROR|FATAL|PANIC|TRAP:|terminated by signal' "$TMP/server.log" |
	grep -v 'canceling statement due to user request' || true)
if [ -n "$problems" ]; then
	echo "==== server log: errors ===="
	echo "$problems" | head -20
fi
roots=$(dpsql -At -c "SELECT count(*) FROM pgsentinel_blocking_trees($R)
                      WHERE depth = 0 AND application_name = 'demo_holder'")
echo "history: $cpu CPU rows, $sleep PgSleep rows, $lock Lock rows, $blocked rows with a blocker;" \
	"the holder is the root of $roots blocking tree(s)"
if [ "$cpu" -gt 0 ] && [ "$sleep" -gt 0 ] && [ "$lock" -gt 0 ] && [ "$blocked" -gt 0 ] &&
	[ "$roots" -gt 0 ] && grep -q '<!DOCTYPE html>' "$HTML"; then
	echo "demo OK"
else
	echo "demo FAILED: the history lacks CPU, PgSleep, Lock or blocker rows, the holder's tree or the HTML report"
	tail -30 "$TMP/server.log"
	exit 1
fi
