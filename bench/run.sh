#!/usr/bin/env bash
# pgsentinel overhead benchmark: one command, writes bench/REPORT.md.
#
#   bench/run.sh            full run (about 25-30 minutes on 2 cores)
#   bench/run.sh --quick    smoke run (under 3 minutes; figures not meaningful)
#
# Options after the mode are passed to bench/bench.py (see --help there).
#
# What it does:
#   1. installs the Debian packages it needs when run as root and they are
#      missing (postgresql-15, postgresql-server-dev-15, postgresql-contrib,
#      postgresql-15-pg-wait-sampling, valgrind, rsync, make, gcc);
#   2. builds pgsentinel from this checkout in bench/work/src and installs it
#      into a PRIVATE relocated copy of the PostgreSQL 15 installation
#      (bench/work/inst), so a concurrent `make install` elsewhere on the
#      machine cannot change the library under the benchmark's feet;
#   3. runs bench/bench.py: throwaway clusters under /tmp, run as the
#      unprivileged user pgsentinel_bench (created when missing), own port
#      and socket directory, everything stopped and removed on exit.
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$BENCH_DIR/.." && pwd)"
WORK="$BENCH_DIR/work"
PGV=15
PG_CONFIG_SYS=/usr/lib/postgresql/$PGV/bin/pg_config
BENCH_USER=pgsentinel_bench

log() { printf '[run.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

PY_PID=""
cleanup() {
    if [ -n "$PY_PID" ] && kill -0 "$PY_PID" 2>/dev/null; then
        kill -TERM "$PY_PID" 2>/dev/null || true
        for _ in $(seq 1 60); do
            kill -0 "$PY_PID" 2>/dev/null || break
            sleep 1
        done
        kill -KILL "$PY_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- packages
need_pkgs=()
for p in postgresql-$PGV postgresql-server-dev-$PGV postgresql-contrib \
         postgresql-$PGV-pg-wait-sampling valgrind rsync make gcc python3; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
        || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        log "installing: ${need_pkgs[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
    else
        log "missing packages (run as root to install them): ${need_pkgs[*]}"
        exit 1
    fi
fi

# ------------------------------------------------------------ bench user
RUN_AS=""
if [ "$(id -u)" = 0 ]; then
    if ! id "$BENCH_USER" >/dev/null 2>&1; then
        log "creating user $BENCH_USER"
        useradd --system --no-create-home --shell /usr/sbin/nologin "$BENCH_USER"
    fi
    RUN_AS="$BENCH_USER"
fi

# ------------------------------------------ private PG install + our build
mkdir -p "$WORK"
INST="$WORK/inst"
log "private PostgreSQL $PGV tree in $INST"
mkdir -p "$INST/usr/lib/postgresql" "$INST/usr/share/postgresql"
rsync -a --delete "/usr/lib/postgresql/$PGV/" "$INST/usr/lib/postgresql/$PGV/"
rsync -a --delete "/usr/share/postgresql/$PGV/" "$INST/usr/share/postgresql/$PGV/"

log "building pgsentinel from $REPO_DIR in $WORK/src"
rsync -a --delete --exclude .git --exclude build --exclude 'bench/work' \
    --exclude '*.o' --exclude '*.bc' --exclude '*.so' \
    "$REPO_DIR/" "$WORK/src/"
make -s -C "$WORK/src" PG_CONFIG="$PG_CONFIG_SYS" clean >/dev/null 2>&1 || true
make -s -C "$WORK/src" PG_CONFIG="$PG_CONFIG_SYS" -j2 >"$WORK/build.log" 2>&1 \
    || { cat "$WORK/build.log" >&2; log "build failed"; exit 1; }
make -s -C "$WORK/src" PG_CONFIG="$PG_CONFIG_SYS" install DESTDIR="$INST" >>"$WORK/build.log" 2>&1 \
    || { cat "$WORK/build.log" >&2; log "install failed"; exit 1; }
chmod -R a+rX "$WORK"

# Which source was measured.
{
    git -C "$REPO_DIR" rev-parse HEAD 2>/dev/null || echo unknown
    git -C "$REPO_DIR" status --porcelain --untracked-files=no -- src Makefile '*.sql' '*.control' 2>/dev/null | wc -l
} > "$WORK/source.txt"

log "starting bench.py $*"
python3 "$BENCH_DIR/bench.py" --pg-bin "$INST/usr/lib/postgresql/$PGV/bin" \
    --run-as "$RUN_AS" --command "bench/run.sh $*" "$@" &
PY_PID=$!
wait "$PY_PID"
rc=$?
PY_PID=""
exit $rc
