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
#   - top wait events
#   - average active sessions, second by second
#   - top statements by samples, and nested statements inside PL/pgSQL
#   - sessions blocked on locks, with their blockers
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

report "pgsentinel_status()" -x -c "SELECT * FROM pgsentinel_status()"

report "Top wait events (samples in the $SECS s window)" -c "
SELECT wait_event_type, wait_event, count(*) AS samples,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct
  FROM pg_active_session_history
 WHERE $W
 GROUP BY 1, 2
 ORDER BY 3 DESC"

report "Average active sessions per second (rows x sampling period)" -c "
SELECT to_char(date_trunc('second', ash_time), 'HH24:MI:SS') AS second,
       round(count(*) * p, 1) AS aas,
       round(count(*) FILTER (WHERE wait_event_type = 'CPU') * p, 1) AS cpu,
       round(count(*) FILTER (WHERE wait_event_type = 'Timeout') * p, 1) AS timeout,
       round(count(*) FILTER (WHERE wait_event_type = 'Lock') * p, 1) AS lock,
       round(count(*) FILTER (WHERE wait_event_type NOT IN ('CPU', 'Timeout', 'Lock')) * p, 1) AS other,
       repeat('#', round(count(*) * p * 4)::int) AS chart
  FROM pg_active_session_history,
       (SELECT sampling_period::numeric AS p FROM pgsentinel_status()) AS s
 WHERE $W
 GROUP BY 1, p
 ORDER BY 1"

report "Top statements by samples (with pg_stat_statements)" -c "
SELECT h.queryid, count(*) AS samples,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct,
       string_agg(DISTINCT h.wait_event, ',') AS waits,
       (SELECT sum(calls) FROM pg_stat_statements s WHERE s.queryid = h.queryid) AS calls,
       (SELECT round((sum(total_exec_time) / nullif(sum(calls), 0))::numeric, 1)
          FROM pg_stat_statements s WHERE s.queryid = h.queryid) AS mean_ms,
       left(regexp_replace(min(h.top_level_query), '\s+', ' ', 'g'), 60) AS top_level_query
  FROM pg_active_session_history AS h
 WHERE $W
 GROUP BY h.queryid
 ORDER BY 2 DESC
 LIMIT 10"

report "Nested statements (PL/pgSQL): what ran inside the top-level call" -c "
SELECT queryid, nested_queryid, count(*) AS samples,
       string_agg(DISTINCT wait_event, ',') AS waits,
       left(regexp_replace(top_level_query, '\s+', ' ', 'g'), 35) AS top_level_query,
       left(regexp_replace(query, '\s+', ' ', 'g'), 60) AS query
  FROM pg_active_session_history
 WHERE $W AND query IS DISTINCT FROM top_level_query
 GROUP BY 1, 2, 5, 6
 ORDER BY 3 DESC
 LIMIT 10"

report "Blocked sessions (blockers > 0)" -c "
SELECT pid, application_name AS app, blockerpid, blocking_pids, blocker_state,
       wait_event, queryid, count(*) AS samples,
       to_char(min(ash_time), 'HH24:MI:SS.MS') AS first_seen,
       to_char(max(ash_time), 'HH24:MI:SS.MS') AS last_seen,
       left(query, 50) AS query
  FROM pg_active_session_history
 WHERE $W AND blockers > 0
 GROUP BY pid, application_name, blockerpid, blocking_pids, blocker_state,
          wait_event, queryid, query
 ORDER BY first_seen, pid"

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
echo "history: $cpu CPU rows, $sleep PgSleep rows, $lock Lock rows, $blocked rows with a blocker"
if [ "$cpu" -gt 0 ] && [ "$sleep" -gt 0 ] && [ "$lock" -gt 0 ] && [ "$blocked" -gt 0 ]; then
	echo "demo OK"
else
	echo "demo FAILED: the history lacks CPU, PgSleep, Lock or blocker rows"
	tail -30 "$TMP/server.log"
	exit 1
fi
