#!/usr/bin/env bash
# bench/pgssh_cost.sh -- metric 5: cost of the statements history per sample.
#
#   bash bench/pgssh_cost.sh [PG_BIN_DIR]
#
# Run after bench/run.sh, which builds pgsentinel and installs it into the
# private PostgreSQL copy bench/work/inst (the default PG_BIN_DIR).  For
# pg_stat_statements holding 100, 1000 and 5000 entries (SQL functions f1..fN
# each called once), ten sessions run a sleeping statement that is sampled
# every 100 ms; the statements worker's CPU time (/proc/PID/schedstat) over an
# 8 s window is divided by the readings it made.  Prints a Markdown table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${1:-$PWD/bench/work/inst/usr/lib/postgresql/15/bin}
USER_RUN=${PGSENTINEL_BENCH_USER:-pgsentinel_bench}
PORT=55466
[ -x "$BIN/postgres" ] || { echo "no PostgreSQL in $BIN: run bench/run.sh first" >&2; exit 1; }
id "$USER_RUN" >/dev/null 2>&1 || useradd -m "$USER_RUN"
run() { if [ "$(id -u)" = 0 ]; then su -s /bin/bash "$USER_RUN" -c "$*"; else bash -c "$*"; fi; }

echo "| pg_stat_statements entries | readings in 8 s | statements worker CPU per reading (µs) | last reading wall µs |"
echo "|---|---|---|---|"
for N in 100 1000 5000; do
	D=$(mktemp -d /tmp/pgsshcost.XXXXXX); chmod 777 "$D"
	run "'$BIN/initdb' -D '$D/data' -A trust >/dev/null"
	cat >> "$D/data/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$D'
listen_addresses = ''
shared_preload_libraries = 'pg_stat_statements,pgsentinel'
pg_stat_statements.max = 10000
pgsentinel_ash.sampling_period = 0.1
CONF
	run "'$BIN/pg_ctl' -D '$D/data' -l '$D/log' -w start >/dev/null"
	psql() { run "'$BIN/psql' -h '$D' -p $PORT -XAtq -d postgres $(printf "%q " "$@")"; }
	psql -c "CREATE EXTENSION pgsentinel; CREATE EXTENSION pg_stat_statements"
	psql -c "DO \$\$BEGIN FOR i IN 1..$N LOOP EXECUTE format('CREATE FUNCTION f%s() RETURNS int LANGUAGE sql AS ''SELECT %s''', i, i); END LOOP; END\$\$"
	run "'$BIN/psql' -h '$D' -p $PORT -XAtq -d postgres -c \"SELECT 'SELECT f' || i || '();' FROM generate_series(1, $N) i\" | '$BIN/psql' -h '$D' -p $PORT -Xq -d postgres >/dev/null"
	for k in 1 2 3 4 5 6 7 8 9 10; do psql -c "SELECT pg_sleep(1) /* s$k */" >/dev/null; done
	pids=()
	for k in 1 2 3 4 5 6 7 8 9 10; do psql -c "SELECT pg_sleep(20) /* s$k */" >/dev/null 2>&1 & pids+=($!); done
	sleep 3
	W=$(psql -c "SELECT pgssh_worker_pid FROM pgsentinel_status()")
	s0=$(psql -c "SELECT pgssh_samples FROM pgsentinel_status()"); c0=$(cut -d' ' -f1 /proc/$W/schedstat)
	sleep 8
	s1=$(psql -c "SELECT pgssh_samples FROM pgsentinel_status()"); c1=$(cut -d' ' -f1 /proc/$W/schedstat)
	last=$(psql -c "SELECT pgssh_last_us FROM pgsentinel_status()")
	echo "| $N | $((s1 - s0)) | $(( (c1 - c0) / 1000 / (s1 - s0 > 0 ? s1 - s0 : 1) )) | $last |"
	run "'$BIN/pg_ctl' -D '$D/data' -m immediate stop >/dev/null"
	wait "${pids[@]}" 2>/dev/null || true
	rm -rf "$D"
done
