#!/usr/bin/env bash
# test/sanitizer-probe/run.sh PG_CONFIG COPT -- build probe.c with COPT,
# start a throwaway server of PG_CONFIG's install in this directory (its
# socket here, no TCP), call each bug, stop it.  Prints "inside: 120" for
# the write inside the chunk; ASan writes its reports where ASAN_OPTIONS's
# log_path says.  Run by scripts/sanitize-check.sh as the test user.
set -u
pgc=$1 copt=$2
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
make -s PG_CONFIG="$pgc" COPT="$copt" || exit 1
bin=$("$pgc" --bindir)
rm -rf data
"$bin/initdb" -D data -A trust >initdb.log 2>&1 || { cat initdb.log; exit 1; }
start() { "$bin/pg_ctl" -D data -o "-k $PWD -c listen_addresses=" -l server.log -w start >/dev/null; }
q() { "$bin/psql" -X -At -h "$PWD" -d postgres -c "$1" 2>&1; }
start || { cat server.log; exit 1; }
q "CREATE FUNCTION probe_write(int) RETURNS int AS '$PWD/probe.so' LANGUAGE C STRICT"
q "CREATE FUNCTION probe_read_freed() RETURNS int AS '$PWD/probe.so' LANGUAGE C"
echo "inside: $(q 'SELECT probe_write(9)')"
# each bug aborts its backend (abort_on_error) and the server restarts:
# call it until a call ends that way, at most a minute
crash() {
	local i
	for i in $(seq 60); do
		case $(q "$1") in *"server closed the connection"*) return 0 ;; esac
		sleep 1
	done
	echo "$1 never ended its backend"
}
crash 'SELECT probe_write(10)'
crash 'SELECT probe_read_freed()'
"$bin/pg_ctl" -D data -m immediate stop >/dev/null 2>&1
exit 0
