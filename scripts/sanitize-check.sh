#!/usr/bin/env bash
# scripts/sanitize-check.sh -- the pg_regress and isolation suites under
# AddressSanitizer and UndefinedBehaviorSanitizer (PostgreSQL 15).
#
#   scripts/sanitize-check.sh [--rebuild-pg] [--build-only]
#                                                   (or: make sanitize-check)
#
# 1. PostgreSQL 15 built from Debian's source package (the upstream tarball
#    that `apt-get source postgresql-15` fetches; root adds a deb-src entry,
#    /etc/apt/sources.list.d/pgsentinel-deb-src.sources, when there is none)
#    with --enable-cassert and --enable-debug, linked with the ASan and UBSan
#    run-time libraries, and installed with pg_stat_statements, pg_regress
#    and pg_isolation_regress (only what the suites use: no pg_dump, ecpg...)
#    into its own prefix $PGSENTINEL_SANITIZE_PREFIX (default
#    /opt/pgsentinel-deps/pg15-sanitize).  The build is reused while the stamp
#    file in that prefix matches the recipe below (--rebuild-pg forces it).
#    PostgreSQL's own code is not instrumented (the checks are for the
#    extension's code; instrumenting the server too doubled the build, 22
#    minutes of two cores), but its memory contexts are built with
#    -DUSE_VALGRIND and a valgrind/memcheck.h that turns Valgrind's client
#    requests into ASan poisoning, so the extension's accesses are checked
#    against palloc'd chunks too: a write past the requested size, a use of
#    pfree'd memory, a read of the free space of a context are reported, not
#    only errors on malloc'd memory.
# 2. The extension, from a copy of the sources in build/pg15-sanitize/, built
#    with that pg_config and the sanitizers (-fsanitize=address,undefined,
#    plus the Makefile's -Werror), installed into that prefix only.
# 3. As the unprivileged user: make installcheck for the REGRESS list, then
#    for the ISOLATION list (temporary preloaded instances, test/pgsentinel.conf,
#    10 ms sampling), with ASAN_OPTIONS/UBSAN_OPTIONS below; every process,
#    the background workers included, inherits them from the postmaster.
#
# A suite fails when pg_regress reports a failed test, and also when a
# sanitizer report appears (ASan writes build/pg15-sanitize/sanitizer/<suite>/
# asan.<pid>; UBSan writes to stderr: the server log or the test output), or
# when the server logs or outputs show "runtime error:",
# "AddressSanitizer", a failed assertion (TRAP), a PANIC, a backend killed by
# a signal other than SIGKILL/SIGTERM, or memory-context corruption warnings:
# a crash of a background worker does not fail any SQL test by itself.
# Signed overflow is not checked: PostgreSQL compiles with -fwrapv (defined
# wrap-around), and so does the extension.  Before the suites, a self-test
# (test/sanitizer-probe/) proves that the build sees what it is for: a
# module built as the extension is writes past a palloc'd chunk and reads a
# pfree'd one, and ASan must report both.
#
# --build-only does step 1 alone (scripts/test-all.sh runs it beside the
# other suites, so that the sanitizer suite finds the build made) and exits
# 0 when the build is there.
#
# Output: pg_regress's own summaries, the reports found, then as the last line
# "N passed, N failed" (one per pg_regress / isolation test; one more failure
# per suite with a sanitizer report or crash; a build failure counts as one).
# Exit status 0 when nothing failed.  Run as root on a fresh Debian 12 it
# installs what the build needs (gcc, make, libc6-dev, bzip2); as a normal
# user it needs a writable prefix and an existing deb-src entry (or a build
# already in the prefix).
#
# Environment: PGSENTINEL_SANITIZE_PREFIX, PGSENTINEL_SUITE_TIMEOUT (seconds
# per suite, default 1800), and those described in scripts/lib.sh and
# scripts/provision.sh.

set -uo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Run from make (make sanitize-check): do not hand make's settings (command-
# line variables such as PG_CONFIG, jobserver) to the makes we run.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

REBUILD=
BUILD_ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--rebuild-pg) REBUILD=1; shift ;;
	--build-only) BUILD_ONLY=1; shift ;;
	-h | --help) sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "unknown argument: $1" >&2; exit 2 ;;
	esac
done

SAN_PREFIX=${PGSENTINEL_SANITIZE_PREFIX:-$PGS_DEPS_DIR/pg15-sanitize}
SAN_PGC=$SAN_PREFIX/bin/pg_config
SAN_STAMP=$SAN_PREFIX/.pgsentinel-sanitize-stamp
SAN_SHIM=$SAN_PREFIX/include/asan-valgrind-shim
SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all"
# PostgreSQL itself is compiled without instrumentation (half the build's
# time) but linked with the sanitizers' run-time libraries: its allocators
# poison and unpoison memory through them (the shim below), and the
# extension, compiled with SAN_FLAGS (SAN_EXT_COPT), checks every access
# it makes against that.
SAN_CFLAGS="-O1 -g -fno-omit-frame-pointer"
SAN_EXT_COPT="-fno-omit-frame-pointer $SAN_FLAGS"
SAN_LDFLAGS="$SAN_FLAGS"
SAN_CPPFLAGS="-DUSE_VALGRIND -I$SAN_SHIM"
SAN_CONFIGURE=(--prefix="$SAN_PREFIX" --enable-debug --enable-cassert
	--without-icu --without-readline --without-zlib)
# What the suites use of PostgreSQL, built and installed (not pg_dump,
# pgbench, ecpg and the other programs that make would build).
SAN_PG_DIRS=(src/backend src/backend/utils/mb/conversion_procs src/backend/snowball
	src/timezone src/interfaces/libpq src/fe_utils src/pl/plpgsql
	src/bin/initdb src/bin/pg_ctl src/bin/psql src/bin/pg_config
	src/test/regress src/test/isolation contrib/pg_stat_statements)
SUITE_TIMEOUT=${PGSENTINEL_SUITE_TIMEOUT:-1800}

# The stand-in for valgrind/memcheck.h (see the top of this file).  Valgrind
# and ASan both keep per-process shadow state, so code that Valgrind finds
# clean (PostgreSQL's buildfarm runs the regression suite under Valgrind with
# USE_VALGRIND) gets no false report from this mapping: "undefined" and
# "defined" both mean addressable here.
san_shim_text() {
	cat <<'EOF'
/* valgrind/memcheck.h for pgsentinel's sanitizer build of PostgreSQL
 * (scripts/sanitize-check.sh): Valgrind client requests as ASan poisoning,
 * through the run-time's functions (ASAN_POISON_MEMORY_REGION is a no-op in
 * code compiled without -fsanitize=address, as PostgreSQL is here). */
#ifndef PGSENTINEL_ASAN_VALGRIND_SHIM_H
#define PGSENTINEL_ASAN_VALGRIND_SHIM_H
#include <sanitizer/asan_interface.h>
#define RUNNING_ON_VALGRIND 0
#define VALGRIND_MAKE_MEM_NOACCESS(addr, size) __asan_poison_memory_region((addr), (size))
#define VALGRIND_MAKE_MEM_UNDEFINED(addr, size) __asan_unpoison_memory_region((addr), (size))
#define VALGRIND_MAKE_MEM_DEFINED(addr, size) __asan_unpoison_memory_region((addr), (size))
#define VALGRIND_CHECK_MEM_IS_DEFINED(addr, size) ((void) 0)
#define VALGRIND_CREATE_MEMPOOL(pool, redzones, zeroed) ((void) 0)
#define VALGRIND_DESTROY_MEMPOOL(pool) ((void) 0)
#define VALGRIND_MEMPOOL_ALLOC(pool, addr, size) __asan_unpoison_memory_region((addr), (size))
#define VALGRIND_MEMPOOL_FREE(pool, addr) ((void) 0)
#define VALGRIND_MEMPOOL_CHANGE(pool, oaddr, naddr, size) __asan_unpoison_memory_region((naddr), (size))
#define VALGRIND_COUNT_ERRORS 0
#define VALGRIND_PRINTF(...) 0
#define VALGRIND_PRINTF_BACKTRACE(...) 0
#endif
EOF
}

# Linked into every PostgreSQL executable (LDFLAGS_EX).  UBSan (unlike ASan)
# reads UBSAN_OPTIONS only at its first report, from /proc/self/environ,
# which PostgreSQL has overwritten by then with the process title
# (ps_status.c): the options would be lost in every server process (no stack
# trace, exit(1) instead of abort).  This hook gives UBSan the variable from
# the environment PostgreSQL moved away.
SAN_UBSAN_OPTIONS_O=$SAN_PREFIX/lib/pgsentinel-ubsan-options.o
san_ubsan_options_text() {
	cat <<'EOF'
/* pgsentinel scripts/sanitize-check.sh: UBSAN_OPTIONS from environ, which
 * PostgreSQL keeps valid, instead of /proc/self/environ, which it clobbers. */
#include <stdlib.h>
const char *__ubsan_default_options(void);
const char *
__ubsan_default_options(void)
{
	const char *s = getenv("UBSAN_OPTIONS");

	return s ? s : "print_stacktrace=1";
}
EOF
}

# What a build in the prefix must have been made with to be reused.
san_recipe() {
	echo "pgsentinel sanitize build 3 (${SAN_PG_DIRS[*]}); configure ${SAN_CONFIGURE[*]}; CFLAGS=$SAN_CFLAGS; LDFLAGS=$SAN_LDFLAGS; CPPFLAGS=$SAN_CPPFLAGS; shim $(san_shim_text | md5sum | cut -c1-12); ubsan options $(san_ubsan_options_text | md5sum | cut -c1-12); gcc $(gcc -dumpfullversion 2>/dev/null)"
}

# The build itself (configure, make, pg_config, pg_regress...) runs sanitized
# programs: no leak checks there either.
export ASAN_OPTIONS=detect_leaks=0
export UBSAN_OPTIONS=print_stacktrace=1

PASSED=0
FAILED=0
SUMMARY=()
START=$SECONDS

# ---------------------------------------------------------------------------
# PostgreSQL 15 with the sanitizers
# ---------------------------------------------------------------------------

san_have_build() {
	[ -z "$REBUILD" ] && [ -x "$SAN_PGC" ] && [ "$(head -1 "$SAN_STAMP" 2>/dev/null)" = "$(san_recipe)" ]
}

# Compiler, make, libc headers, bzip2 (the tarball); root installs them.
san_ensure_build_deps() {
	local missing=()
	command -v gcc >/dev/null || missing+=(gcc)
	command -v make >/dev/null || missing+=(make)
	command -v bzip2 >/dev/null || missing+=(bzip2)
	[ -e /usr/include/stdio.h ] || missing+=(libc6-dev)
	[ -e /usr/include/zstd.h ] || missing+=(libzstd-dev)
	if [ ${#missing[@]} -gt 0 ]; then
		pgs_is_root || pgs_die "missing ${missing[*]}; as root: apt-get install -y ${missing[*]}"
		pgs_apt_install "${missing[@]}"
	fi
	# gcc's runtime libraries for the sanitizers (libasan8, libubsan1 come
	# with gcc-12 on Debian 12): check that a sanitized program links and runs.
	local probe
	probe=$(mktemp -d) || pgs_die "mktemp failed"
	printf 'int main(void) { return 0; }\n' >"$probe/p.c"
	# shellcheck disable=SC2086 # several flags
	if ! gcc $SAN_FLAGS -o "$probe/p" "$probe/p.c" >"$probe/log" 2>&1 || ! "$probe/p"; then
		cat "$probe/log" >&2
		rm -rf "$probe"
		pgs_die "gcc cannot build a program with $SAN_FLAGS (libasan/libubsan missing?)"
	fi
	rm -rf "$probe"
}

# Versions of the postgresql-15 source package apt knows, newest first.
san_source_versions() {
	apt-cache showsrc postgresql-15 2>/dev/null |
		awk '/^Package: /{p = ($2 == "postgresql-15")} p && /^Version: /{print $2}' |
		sort -Vru
}

# Download the source package into directory $1 (the first version that
# downloads: a mirror may lack the newest one) and print its upstream tarball.
san_fetch_source() {
	local work=$1 list=/etc/apt/sources.list.d/pgsentinel-deb-src.sources v tarball
	if [ -z "$(san_source_versions)" ]; then
		pgs_is_root || pgs_die "apt has no source package postgresql-15: add a deb-src entry for bookworm main (as root: bash $0 does it)"
		if [ ! -e "$list" ]; then
			pgs_log "adding $list (deb-src bookworm main, for the PostgreSQL 15 source)" >&2
			cat >"$list" <<'EOF'
# Added by pgsentinel's scripts/sanitize-check.sh: the PostgreSQL 15 source
# package for its sanitizer build (apt-get source postgresql-15).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
		fi
		pgs_log "apt-get update" >&2
		apt-get update -qq >&2 || pgs_die "apt-get update failed"
		[ -n "$(san_source_versions)" ] || pgs_die "apt still has no source package postgresql-15"
	fi
	for v in $(san_source_versions); do
		pgs_log "apt-get source --download-only postgresql-15=$v" >&2
		if (cd "$work" && apt-get source --download-only -qq "postgresql-15=$v") >"$work/apt-source.log" 2>&1; then
			tarball=$work/postgresql-15_${v%-*}.orig.tar.bz2
			if [ -f "$tarball" ]; then
				echo "$tarball"
				return 0
			fi
		fi
		pgs_warn "could not download postgresql-15 $v: $(grep -E '^E:' "$work/apt-source.log" | head -1)"
	done
	pgs_die "could not download the postgresql-15 source package"
}

# Build and install PostgreSQL 15 into $SAN_PREFIX.  Logs in $SAN_PREFIX.build.
san_build_pg() {
	local work=$SAN_PREFIX.build t0=$SECONDS tarball src jobs
	jobs=$(nproc)
	rm -rf "$work" "$SAN_PREFIX"
	mkdir -p "$work" "$SAN_SHIM/valgrind" || pgs_die "cannot create $work and $SAN_PREFIX"
	tarball=$(san_fetch_source "$work") || exit 1
	pgs_log "unpacking $(basename "$tarball")"
	tar -xjf "$tarball" -C "$work" || pgs_die "cannot unpack $tarball"
	src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'postgresql-15*' | head -1)
	[ -x "$src/configure" ] || pgs_die "no configure in $work"
	san_shim_text >"$SAN_SHIM/valgrind/memcheck.h"
	mkdir -p "$(dirname "$SAN_UBSAN_OPTIONS_O")"
	san_ubsan_options_text >"$work/ubsan-options.c"
	gcc -O2 -Wall -c -o "$SAN_UBSAN_OPTIONS_O" "$work/ubsan-options.c" ||
		pgs_die "cannot compile $work/ubsan-options.c"

	pgs_log "configure ${SAN_CONFIGURE[*]} CFLAGS='$SAN_CFLAGS' (log: $work/configure.log)"
	(cd "$src" && ./configure "${SAN_CONFIGURE[@]}" CFLAGS="$SAN_CFLAGS" \
		LDFLAGS="$SAN_LDFLAGS" LDFLAGS_EX="$SAN_UBSAN_OPTIONS_O" CPPFLAGS="$SAN_CPPFLAGS") >"$work/configure.log" 2>&1 ||
		{ tail -30 "$work/configure.log"; pgs_die "configure failed"; }
	pgs_log "make -j$jobs in ${SAN_PG_DIRS[*]} (log: $work/make.log)"
	local d
	for d in "${SAN_PG_DIRS[@]}"; do
		make -C "$src/$d" -j"$jobs" >>"$work/make.log" 2>&1 ||
			{ grep -E 'error|Error' "$work/make.log" | tail -30; pgs_die "PostgreSQL build failed in $d"; }
	done
	pgs_log "make install (server, PGXS, pg_regress, pg_isolation_regress, pg_stat_statements)"
	for d in "${SAN_PG_DIRS[@]}" src/include src/makefiles src/port src/common config; do
		make -C "$src/$d" install >>"$work/install.log" 2>&1 ||
			{ tail -30 "$work/install.log"; pgs_die "PostgreSQL install failed in $d"; }
	done
	make -C "$src/src" install-local >>"$work/install.log" 2>&1 ||
		{ tail -30 "$work/install.log"; pgs_die "PostgreSQL install failed (src/Makefile.global)"; }

	# What PGXS's installcheck runs: $(top_builddir)/src/test/... in the
	# installed pgxs tree.
	local pgxs f
	pgxs=$(dirname "$("$SAN_PGC" --pgxs)")/../..
	for f in "$("$SAN_PGC" --pgxs)" "$pgxs/src/test/regress/pg_regress" \
		"$pgxs/src/test/isolation/pg_isolation_regress" "$pgxs/src/test/isolation/isolationtester" \
		"$("$SAN_PGC" --bindir)/postgres" "$("$SAN_PGC" --sharedir)/extension/pg_stat_statements.control"; do
		[ -e "$f" ] || pgs_die "the sanitizer build lacks $f"
	done
	"$SAN_PGC" --ldflags | grep -q -- '-fsanitize=address,undefined' ||
		pgs_die "$SAN_PGC --ldflags has no sanitizer flags"
	chmod -R a+rX "$SAN_PREFIX"
	{
		san_recipe
		echo "$("$SAN_PGC" --version) from $(basename "$tarball"), built in $((SECONDS - t0)) s on $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
	} >"$SAN_STAMP"
	rm -rf "$work"
	pgs_log "PostgreSQL sanitizer build: $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------------------
# The suites
# ---------------------------------------------------------------------------

SUITE_PID=
DIR=
trap 'pgs_interrupted "$DIR"' INT TERM

# What the sanitizers and the assertion-enabled server leave in the logs and
# outputs of suite $1 (regress|isolation).  Prints them and returns 0 when
# there is any (1 when the suite is clean).
san_findings() {
	local kind=$1 found=1 f where=()
	# pg_regress writes the server log to <outputdir>/log/postmaster.log.
	case $kind in
	regress) where=("$DIR/log" "$DIR/results" "$DIR/tmp_check" "$DIR/regression.diffs") ;;
	isolation) where=("$DIR/output_iso" "$DIR/tmp_check_iso") ;;
	esac
	local reports=()
	mapfile -t reports < <(find "$DIR/sanitizer/$kind" -type f -size +0 2>/dev/null | sort)
	for f in "${reports[@]:0:3}"; do
		echo "---- sanitizer report ${f#"$DIR"/} (first 60 lines) ----"
		head -60 "$f"
	done
	if [ ${#reports[@]} -gt 0 ]; then
		found=0
		echo "---- ${#reports[@]} sanitizer report(s) in ${DIR#"$PGS_REPO"/}/sanitizer/$kind/: ----"
		for f in "${reports[@]}"; do
			printf '%s: %s\n' "$(basename "$f")" "$(grep -m1 -E 'ERROR: |runtime error:' "$f")"
		done | head -20
	fi
	local hits
	hits=$(find "${where[@]}" -type f \( -name '*.log' -o -name '*.out' -o -name '*.diffs' \) -print0 2>/dev/null |
		xargs -0r grep -HE 'runtime error:|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|^TRAP:|PANIC:|terminated by signal (4|6|7|8|11)|detected write past chunk end|problem in alloc set|reference leak' 2>/dev/null)
	if [ -n "$hits" ]; then
		found=0
		echo "---- sanitizer / crash lines in the server logs and outputs (first 40) ----"
		printf '%s\n' "$hits" | head -40
		# UBSan writes its report (with the stack) to stderr: show it.
		local log
		while IFS= read -r log; do
			echo "---- ${log#"$DIR"/}: around the first report ----"
			grep -m1 -B2 -A25 -E 'runtime error:|AddressSanitizer|^TRAP:' "$log"
		done < <(printf '%s\n' "$hits" | grep -E 'runtime error:|AddressSanitizer|^[^:]*:TRAP:' | cut -d: -f1 | sort -u | head -3)
	fi
	return $found
}

# Run suite $1 (regress|isolation) in $DIR.  Adds to PASSED/FAILED.
san_run_suite() {
	local kind=$1 log=$DIR/sanitize-$1.log t0=$SECONDS rc p=0 f=0 args=(PG_CONFIG="$SAN_PGC" PGS_TEMP_INSTANCE=1 TAP_TESTS=)
	case $kind in
	regress) args+=(ISOLATION=) ;;
	isolation) args+=(REGRESS=) ;;
	esac
	local sandir=$DIR/sanitizer/$kind
	rm -rf "$sandir"
	mkdir -p "$sandir"
	pgs_give_to_user "$DIR/sanitizer"
	echo
	pgs_log "PostgreSQL 15 + ASan/UBSan: $kind tests (make installcheck ${args[*]:1})"
	# ASan's reports go to files (log_path gets .<pid>); UBSan's to stderr
	# (gcc's libubsan ignores log_path next to libasan), so to the server
	# log.  abort_on_error: a report kills the process with SIGABRT, a crash
	# that the postmaster logs and recovers from.
	local asan="detect_leaks=0:abort_on_error=1:halt_on_error=1:disable_coredump=1:detect_stack_use_after_return=0:log_path=$sandir/asan"
	local ubsan="print_stacktrace=1:halt_on_error=1:abort_on_error=1:disable_coredump=1"
	pgs_run_logged "$log" "$SUITE_TIMEOUT" "$DIR" \
		"${PGS_AS_USER[@]}" env HOME="$DIR" PG_TEST_PORT_DIR="$DIR/portlock" \
		ASAN_OPTIONS="$asan" UBSAN_OPTIONS="$ubsan" \
		make "${args[@]}" installcheck
	rc=$?
	[ "$rc" = 124 ] && pgs_warn "$kind tests timed out after ${SUITE_TIMEOUT}s"
	pgs_stop_leftover_servers "$DIR"

	local line
	if line=$(grep -Eo 'All [0-9]+ tests passed' "$log" | tail -1) && [ -n "$line" ]; then
		p=$(echo "$line" | grep -Eo '[0-9]+')
	elif line=$(grep -Eo '[0-9]+ of [0-9]+ tests failed' "$log" | tail -1) && [ -n "$line" ]; then
		f=${line%% of *}
		p=$(($(echo "$line" | awk '{print $3}') - f))
	fi
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
		pgs_warn "$kind tests failed without a test summary (exit $rc)"
	fi
	local san=clean
	if [ "$f" != 0 ]; then
		local out=.
		[ "$kind" = isolation ] && out=output_iso
		if [ -s "$DIR/$out/regression.diffs" ]; then
			echo "---- $out/regression.diffs (first 100 lines) ----"
			head -100 "$DIR/$out/regression.diffs"
		fi
	fi
	if san_findings "$kind"; then
		san="SANITIZER REPORT OR CRASH"
		f=$((f + 1))
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SUMMARY+=("sanitizer $kind: $p passed, $f failed, $san ($((SECONDS - t0)) s)")
}

# The suite's self-test (test/sanitizer-probe/): a module built as the
# extension is writes one byte past a palloc'd chunk and reads a pfree'd
# one; ASan must report both, and the same write inside the chunk must
# pass.  One test: a suite that cannot see such bugs fails.
san_self_test() {
	local pdir=$DIR/probe t0=$SECONDS ok=1 out
	rm -rf "$pdir"
	cp -R "$PGS_REPO/test/sanitizer-probe" "$pdir"
	pgs_give_to_user "$pdir"
	echo
	pgs_log "self-test: ASan reports a write past a palloc'd chunk and a read of a pfree'd one"
	out=$("${PGS_AS_USER[@]}" env HOME="$pdir" \
		ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:disable_coredump=1:log_path=$pdir/asan" \
		UBSAN_OPTIONS=print_stacktrace=1 \
		bash "$pdir/run.sh" "$SAN_PGC" "$SAN_EXT_COPT" 2>&1)
	echo "$out"
	grep -q '^inside: 120$' <<<"$out" || { pgs_warn "self-test: the write inside the chunk failed"; ok=0; }
	grep -qs 'WRITE of size 1' "$pdir"/asan.* || { pgs_warn "self-test: ASan missed the write past a palloc'd chunk"; ok=0; }
	grep -qs 'READ of size 1' "$pdir"/asan.* || { pgs_warn "self-test: ASan missed the read of a pfree'd chunk"; ok=0; }
	if [ "$ok" = 1 ]; then
		PASSED=$((PASSED + 1))
		SUMMARY+=("sanitizer self-test: both planted bugs reported ($((SECONDS - t0)) s)")
	else
		FAILED=$((FAILED + 1))
		SUMMARY+=("sanitizer self-test: FAILED, the suite would miss such bugs (see $pdir)")
	fi
}

# ---------------------------------------------------------------------------

pgs_setup_user
pgs_prepare_build_root
DIR=$PGS_BUILD_ROOT/pg15-sanitize

# One run at a time per prefix: the build and the extension installed in it.
mkdir -p "$(dirname "$SAN_PREFIX")" 2>/dev/null
exec {SAN_LOCK_FD}>>"$SAN_PREFIX.lock" || pgs_die "cannot open $SAN_PREFIX.lock (run as root, or set PGSENTINEL_SANITIZE_PREFIX)"
if ! flock -n "$SAN_LOCK_FD"; then
	pgs_log "waiting for another sanitizer run ($SAN_PREFIX.lock)"
	flock -w 3600 "$SAN_LOCK_FD" || pgs_die "timed out waiting for $SAN_PREFIX.lock"
fi

if san_have_build; then
	pgs_log "reusing the PostgreSQL sanitizer build in $SAN_PREFIX ($(sed -n 2p "$SAN_STAMP"))"
else
	san_ensure_build_deps
	san_build_pg
fi
[ -z "$BUILD_ONLY" ] || exit 0

echo
pgs_log "building pgsentinel with $SAN_PGC in $DIR"
pgs_log "CFLAGS: $("$SAN_PGC" --cflags) $SAN_EXT_COPT -Werror"
pgs_copy_sources "$DIR"
pgs_give_to_user "$DIR"
if ! (cd "$DIR" && pgs_as_user_in "$DIR" make -s -j"$(nproc)" PG_CONFIG="$SAN_PGC" COPT="$SAN_EXT_COPT") ||
	! (cd "$DIR" && make -s PG_CONFIG="$SAN_PGC" COPT="$SAN_EXT_COPT" install) ||
	! nm -D "$DIR/pgsentinel.so" | grep __asan_report >/dev/null ||
	! pgs_check_installed 15-sanitize "$SAN_PGC"; then
	pgs_warn "the extension did not build or install with the sanitizer flags"
	FAILED=$((FAILED + 1))
	SUMMARY+=("sanitizer: extension build/install FAILED")
else
	san_self_test
	san_run_suite regress
	san_run_suite isolation
fi

echo
pgs_log "Sanitizer summary ($((SECONDS - START)) s)"
printf '  %s\n' "${SUMMARY[@]}"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
