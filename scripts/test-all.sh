#!/usr/bin/env bash
# scripts/test-all.sh -- run every pgsentinel test on PostgreSQL 15 to 18.
#
#   scripts/test-all.sh [--pg 15|16|17|18]... [--no-tap] [--no-sanitize]
#                       [--sanitize-only] [--private-install]
#                       [--repeat N] [--cpu-load] [--no-pgxn] [--no-debian]
#                       [--no-prometheus] [--no-chromium] [--serial]
#
# First, cheap checks of the tree: scripts/check-version.sh (the version
# agrees in the control file, META.json, debian/changelog, CHANGELOG.md and
# the README) and its self-test; then scripts/test-pgxn.sh (META.json valid
# against the PGXN meta spec, `make dist`, a build of the distribution;
# --no-pgxn skips it).
#
# For each version: install what is missing (root only, see
# scripts/provision.sh), build the extension in build/pgNN/ (a copy of the
# sources: two in-tree PGXS builds would collide), install it into that
# PostgreSQL, then run as an unprivileged user
#   make installcheck ISOLATION= TAP_TESTS=   pg_regress tests (sql/, expected/)
#   make installcheck REGRESS= TAP_TESTS=     isolation tests (specs/)
#   make installcheck REGRESS= ISOLATION=     TAP tests (t/*.pl), PostgreSQL 15
#                                    only: the other installs have no TAP modules
# pg_regress and isolation start their own preloaded throwaway server
# (--temp-instance, test/pgsentinel.conf) in a private socket directory, and
# the TAP tests start theirs with PostgreSQL::Test::Cluster on free ports, so
# no system cluster and no fixed port is ever used.
#
# After the PostgreSQL 15 suites, scripts/test-prometheus.sh runs
# prometheus/pgsentinel-queries.yaml in a real prometheus-postgres-exporter
# against a server of that install after a known workload, and checks the
# scraped metrics (--no-prometheus skips it; about 90 s).
#
# With the TAP tests on PostgreSQL 15, the chromium suite:
# scripts/render-report.sh renders the HTML report of a real workload with
# headless Chromium (Debian package chromium, installed when missing and
# root) and checks the picture; one pass or failure per check it prints.
# --no-chromium skips it.
#
# When PostgreSQL 15 is tested, one more suite, last: scripts/sanitize-check.sh
# (also `make sanitize-check`) runs the pg_regress and isolation tests again
# on a PostgreSQL 15 built from source with AddressSanitizer and UBSan (built
# once into /opt/pgsentinel-deps/pg15-sanitize, then reused; the build runs
# niced beside the other suites from the start) and fails on any sanitizer
# report or crash even when every test passes.  --no-sanitize skips
# it; --sanitize-only runs it alone (and installs nothing into the system
# PostgreSQL).
#
# Before the sanitizer suite, as root, scripts/test-debian.sh builds the Debian package
# postgresql-15-pgsentinel with dpkg-buildpackage from `git archive HEAD`,
# installs it, runs a sample on a cluster using the packaged library and
# removes it (--no-debian skips it).
#
# As root, everything that runs PostgreSQL runs as $PGSENTINEL_TEST_USER
# (default pgsentinel_test); the extension is installed into the system
# PostgreSQL.  As a normal user, it is installed into a private relocated
# copy of PostgreSQL under build/ unless the PostgreSQL directories are
# writable (see pgs_private_copy in scripts/provision.sh); --private-install
# forces that copy even as root.
#
# Output: each runner's own summary ("All N tests passed.", "N of M tests
# failed.", "Result: PASS", "Files=..., Tests=..."), the diffs and logs of
# what failed, and as the last line "N passed, N failed".  Counting: one per
# pg_regress test and per isolation test, one per TAP test *file* (a file
# with any failed assertion counts as one failure); a version that does not
# build, or a suite that does not report a summary, counts as one failure;
# the sanitizer suite adds its own "N passed, N failed" (one per test, plus
# one failure per suite with a sanitizer report or crash).
# Exit status: 0 when nothing failed, 1 otherwise.
#
# Two lanes: when PostgreSQL 15 and another version are tested, the PGXN
# check, the other versions' suites and the sanitizer suite run in a second
# lane (this script with --lane, output in build/lane.log, printed and
# counted at the end) beside the PostgreSQL 15 suites; --serial runs all in
# one lane, in the order above.
#
# Stress mode, to prove the suites do not depend on timing: --repeat N runs
# every selected suite N times (built and installed once), and --cpu-load
# keeps every core busy with one spinning process per core for the whole
# run.  Each run of a suite counts as above, and the summary adds, per
# suite, how many of its runs failed.  PROVE_TESTS (a list of t/*.pl files)
# narrows the TAP suite, as in PGXS.  Example:
#   PROVE_TESTS='t/013_statements_worker.pl t/016_history_restart.pl' \
#     scripts/test-all.sh --pg 15 --repeat 30 --cpu-load --no-sanitize
#
# Environment: PGSENTINEL_SUITE_TIMEOUT (seconds per suite, default 1800),
# PGSENTINEL_TOTAL_TIMEOUT (seconds for the whole run, default 0 = none: a
# suite gets at most what is left, a suite with nothing left is not run and
# counts as one failure, and the summary is still printed),
# PGSENTINEL_SANITIZE_TIMEOUT (seconds for the sanitizer suite, PostgreSQL
# build included, default 2700), PROVE_FLAGS (default -v --timer -j2: two
# TAP files at a time, each file's output printed whole when it ends), and those
# described in scripts/lib.sh, scripts/provision.sh and
# scripts/sanitize-check.sh.

set -uo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

VERSIONS=()
TAP=tap
SANITIZE=yes
REPEAT=1
RUN=1
RUN_LABEL=
CPU_LOAD=no
PGXN=yes
DEBIAN=yes
PROMETHEUS=yes
CHROMIUM=yes
PARALLEL=yes
LANE=no
while [ $# -gt 0 ]; do
	case $1 in
	--pg) [ $# -ge 2 ] || usage 2; VERSIONS+=("$2"); shift 2 ;;
	--pg=*) VERSIONS+=("${1#--pg=}"); shift ;;
	--no-tap) TAP=notap; shift ;;
	--no-sanitize) SANITIZE=no; shift ;;
	--sanitize-only) SANITIZE=only; shift ;;
	--private-install) export PGSENTINEL_PRIVATE_INSTALL=1; shift ;;
	--repeat) [ $# -ge 2 ] || usage 2; REPEAT=$2; shift 2 ;;
	--repeat=*) REPEAT=${1#--repeat=}; shift ;;
	--cpu-load) CPU_LOAD=yes; shift ;;
	--no-pgxn) PGXN=no; shift ;;
	--no-debian) DEBIAN=no; shift ;;
	--no-prometheus) PROMETHEUS=no; shift ;;
	--no-chromium) CHROMIUM=no; shift ;;
	--serial) PARALLEL=no; shift ;;
	--lane) LANE=yes; shift ;; # (internal: the second lane, see below)
	-h | --help) usage 0 ;;
	*) echo "unknown argument: $1" >&2; usage 2 ;;
	esac
done
[ ${#VERSIONS[@]} -gt 0 ] || [ "$LANE" = yes ] || VERSIONS=(15 16 17 18)
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || pgs_die "--repeat needs a positive number, not '$REPEAT'"
for v in "${VERSIONS[@]}"; do
	case $v in 15 | 16 | 17 | 18) ;; *) pgs_die "unsupported PostgreSQL version: $v (15, 16, 17 or 18)" ;; esac
done

SUITE_TIMEOUT=${PGSENTINEL_SUITE_TIMEOUT:-1800}
SANITIZE_TIMEOUT=${PGSENTINEL_SANITIZE_TIMEOUT:-2700}
TOTAL_TIMEOUT=${PGSENTINEL_TOTAL_TIMEOUT:-0}
export PROVE_FLAGS=${PROVE_FLAGS:--v --timer -j2}

PASSED=0
FAILED=0
SUMMARY=()
START=$SECONDS

if [ "$SANITIZE" = only ]; then
	VERSIONS=() # scripts/sanitize-check.sh installs what it needs
elif [ "$SANITIZE" = yes ] && [ "$LANE" = no ] && [[ " ${VERSIONS[*]} " != *" 15 "* ]]; then
	SANITIZE=no # a PostgreSQL 15 suite
fi
# (the second lane has what the first installed)
if [ "$LANE" = no ] && [ ${#VERSIONS[@]} -gt 0 ]; then
	pgs_ensure_deps "${VERSIONS[*]}" "$([ "$TAP" = tap ] && [[ " ${VERSIONS[*]} " == *" 15 "* ]] && echo tap)"
fi
pgs_setup_user
pgs_prepare_build_root

# On an interrupt, stop the running suite (the process group of its timeout),
# the sanitizer build beside it and the CPU load.
SUITE_PID=
LOAD_PIDS=()
SAN_BUILD_PID=
stop_cpu_load() {
	[ ${#LOAD_PIDS[@]} -eq 0 ] || kill "${LOAD_PIDS[@]}" 2>/dev/null
	LOAD_PIDS=()
}
LANE_PID=
stop_background() {
	stop_cpu_load
	[ -z "$SAN_BUILD_PID" ] || kill -- -"$SAN_BUILD_PID" 2>/dev/null
	SAN_BUILD_PID=
	[ -z "$LANE_PID" ] || kill -TERM -- -"$LANE_PID" 2>/dev/null
	LANE_PID=
}
trap 'stop_background; pgs_interrupted "$PGS_BUILD_ROOT"' INT TERM
trap stop_background EXIT

# The sanitizer build of PostgreSQL 15 (about 5 minutes of both cores, once
# per machine) shares nothing with the suites before the sanitizer suite:
# it runs beside them from the start, niced so that they keep the CPU they
# ask for, and the sanitizer suite waits for it (sanitize-check.sh's lock).
# Two apt-get runs at once wait for each other instead of failing.
if [ "$SANITIZE" = yes ] && [ "$LANE" = no ]; then
	APT_CONFIG=$PGS_BUILD_ROOT/apt-wait.conf
	echo 'DPkg::Lock::Timeout "600";' >"$APT_CONFIG"
	export APT_CONFIG
	pgs_log "PostgreSQL 15 sanitizer build beside the suites (log: $PGS_BUILD_ROOT/pg15-sanitize-build.log)"
	setsid nice -n 10 bash "$PGS_REPO/scripts/sanitize-check.sh" --build-only \
		>"$PGS_BUILD_ROOT/pg15-sanitize-build.log" 2>&1 </dev/null &
	SAN_BUILD_PID=$!
fi
if [ "$CPU_LOAD" = yes ]; then
	# each spinner also ends when this script is gone, however it ended
	for _ in $(seq "$(nproc)"); do
		bash -c 'while kill -0 "$1" 2>/dev/null; do for i in {1..200000}; do :; done; done' spin $$ &
		LOAD_PIDS+=($!)
	done
	pgs_log "CPU load: ${#LOAD_PIDS[@]} spinning processes (${LOAD_PIDS[*]})"
fi

# Two lanes.  The PostgreSQL 15 suites spend most of their time waiting
# for servers (the TAP suite: 150 s of CPU in 20 minutes), and the other
# versions' suites and the sanitizer suite share nothing with them (their
# own builds, installs, servers and ports).  So a second lane -- this
# script again with --lane, its output in build/lane.log, printed when it
# ends, its counts added to ours -- runs the PGXN check, the suites of the
# other versions and the sanitizer suite beside the first, which runs the
# version check, the PostgreSQL 15 suites and the Debian package.
# --serial (and --repeat) run everything in this one lane.
LANE_LOG=$PGS_BUILD_ROOT/lane.log
LANE_SUMMARY=$PGS_BUILD_ROOT/lane.summary
if [ "$LANE" = no ] && [ "$PARALLEL" = yes ] && [ "$REPEAT" = 1 ] &&
	[[ " ${VERSIONS[*]} " == *" 15 "* ]] && [ ${#VERSIONS[@]} -gt 1 ]; then
	lane_args=(--lane --no-tap --no-debian --no-prometheus --no-chromium)
	[ "$PGXN" = yes ] || lane_args+=(--no-pgxn)
	[ "$SANITIZE" = yes ] || lane_args+=(--no-sanitize)
	for v in "${VERSIONS[@]}"; do [ "$v" = 15 ] || lane_args+=(--pg "$v"); done
	rm -f "$LANE_SUMMARY"
	pgs_log "second lane: bash scripts/test-all.sh ${lane_args[*]} (log: $LANE_LOG)"
	lane_time=0
	[ "$TOTAL_TIMEOUT" = 0 ] || lane_time=$((TOTAL_TIMEOUT - (SECONDS - START)))
	# (the same build root: the lane's summary is read from it)
	PGSENTINEL_BUILD_DIR=$PGS_BUILD_ROOT PGSENTINEL_TOTAL_TIMEOUT=$lane_time setsid bash "${BASH_SOURCE[0]}" "${lane_args[@]}" \
		>"$LANE_LOG" 2>&1 </dev/null &
	LANE_PID=$!
	VERSIONS=(15)
	PGXN=no
	SANITIZE=no
fi

# Wait for the second lane (at most until the run's time is spent), print
# its output and add its counts.
join_lane() {
	[ -n "$LANE_PID" ] || return 0
	local t0=$SECONDS line
	echo
	pgs_log "waiting for the second lane ($LANE_LOG)"
	while kill -0 "$LANE_PID" 2>/dev/null &&
		{ [ "$TOTAL_TIMEOUT" = 0 ] || [ $((TOTAL_TIMEOUT - (SECONDS - START))) -gt 60 ]; }; do
		sleep 5
	done
	kill -0 "$LANE_PID" 2>/dev/null && kill -TERM -- -"$LANE_PID" 2>/dev/null
	wait "$LANE_PID"
	LANE_PID=
	pgs_log "the second lane is done ($((SECONDS - t0)) s waited); its output:"
	cat "$LANE_LOG"
	if [ -s "$LANE_SUMMARY" ] && read -r line <"$LANE_SUMMARY" &&
		[[ $line =~ ^([0-9]+)\ ([0-9]+)$ ]]; then
		PASSED=$((PASSED + BASH_REMATCH[1]))
		FAILED=$((FAILED + BASH_REMATCH[2]))
		mapfile -t -s 1 lines <"$LANE_SUMMARY"
		SUMMARY+=("${lines[@]}")
	else
		FAILED=$((FAILED + 1))
		SUMMARY+=("second lane: no summary (it failed or ran out of time): $LANE_LOG")
	fi
}

# Runs that failed, per suite label, for the stress summary.
declare -A RUNS_FAILED=()
declare -A RUNS_DONE=()
count_run() {
	RUNS_DONE[$1]=$((${RUNS_DONE[$1]:-0} + 1))
	[ "$2" = 0 ] || RUNS_FAILED[$1]=$((${RUNS_FAILED[$1]:-0} + 1))
}

# Report server crashes (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL; not the
# SIGKILL/SIGTERM that tests send on purpose), PANICs and failed assertions
# from the servers' logs, which a test could miss (a crash after its last
# query still passes).  Printed, not counted.
scan_server_logs() {
	local dir=$1 hits
	hits=$(find "$dir" \( -path '*/log/*' -o -name 'postmaster.log' \) -type f -print0 2>/dev/null |
		xargs -0r grep -HE 'terminated by signal (4|6|7|8|11)|PANIC:|TRAP:|was terminated by exception' 2>/dev/null |
		head -20)
	if [ -n "$hits" ]; then
		echo "WARNING: server logs in $dir report crashes or panics:"
		printf '%s\n' "$hits"
	fi
}

# Set LIMIT to the time a suite may take: $1 seconds, less if the total
# time (PGSENTINEL_TOTAL_TIMEOUT) is nearly spent.  When none is left the
# suite labelled $2 counts as failed, not run, and this returns 1.
suite_time_limit() {
	LIMIT=$1
	[ "$TOTAL_TIMEOUT" -gt 0 ] || return 0
	local left=$((TOTAL_TIMEOUT - (SECONDS - START) - 60))
	if [ "$left" -le 0 ]; then
		pgs_warn "$2 not run: PGSENTINEL_TOTAL_TIMEOUT (${TOTAL_TIMEOUT}s) reached"
		FAILED=$((FAILED + 1))
		SUMMARY+=("$2: NOT RUN (out of time)")
		return 1
	fi
	[ "$left" -lt "$LIMIT" ] && LIMIT=$left
	return 0
}

# Run one suite: $1 version, $2 kind (regress|isolation|tap), $3 build dir,
# rest: make arguments.  Adds to PASSED/FAILED, prints diagnostics on failure.
run_suite() {
	local v=$1 kind=$2 dir=$3
	shift 3
	local log=$PGS_BUILD_ROOT/pg$v-$kind.log t0=$SECONDS rc p=0 f=0
	# PGXS has one target, installcheck, that runs pg_regress, then the
	# isolation tests, then (TAP_TESTS=1) the TAP tests, and stops at the
	# first failing one; emptying the other lists runs one suite at a time.
	local args=("$@" PGS_TEMP_INSTANCE=1)
	case $kind in
	regress) args+=("ISOLATION=" "TAP_TESTS=") ;;
	isolation) args+=("REGRESS=" "TAP_TESTS=") ;;
	tap) args+=("PROVE_FLAGS=$PROVE_FLAGS" "REGRESS=" "ISOLATION=") ;;
	esac
	echo
	pgs_log "PostgreSQL $v: $kind tests (make installcheck ${args[*]: -2})"
	suite_time_limit "$SUITE_TIMEOUT" "PostgreSQL $v $kind" || return
	pgs_run_logged "$log" "$LIMIT" "$dir" \
		"${PGS_AS_USER[@]}" env HOME="$dir" PG_TEST_PORT_DIR="$dir/portlock" \
		make "${args[@]}" installcheck
	rc=$?
	[ "$rc" = 124 ] && pgs_warn "$kind tests on PostgreSQL $v timed out after ${LIMIT}s"
	pgs_stop_leftover_servers "$dir"

	local line
	case $kind in
	regress | isolation)
		# PG 15: " All 5 tests passed. "   PG 16+: "# All 5 tests passed."
		#        " 1 of 5 tests failed. "          "# 1 of 5 tests failed."
		if line=$(grep -Eo 'All [0-9]+ tests passed' "$log" | tail -1) && [ -n "$line" ]; then
			p=$(echo "$line" | grep -Eo '[0-9]+')
		elif line=$(grep -Eo '[0-9]+ of [0-9]+ tests failed' "$log" | tail -1) && [ -n "$line" ]; then
			f=${line%% of *}
			p=$(($(echo "$line" | awk '{print $3}') - f))
		fi
		;;
	tap)
		# prove ends with "Files=3, Tests=42, ..." and "Result: PASS|FAIL".
		if line=$(grep -E '^Files=[0-9]+, Tests=' "$log" | tail -1) && [ -n "$line" ]; then
			local files
			files=$(echo "$line" | sed -E 's/^Files=([0-9]+),.*/\1/')
			f=$(tap_failed_files "$log" | wc -l)
			if [ "$f" = 0 ] && { [ "$rc" != 0 ] || ! grep -q '^Result: PASS' "$log"; }; then
				f=1
			fi
			p=$((files - f))
			[ "$p" -ge 0 ] || p=0
		fi
		;;
	esac
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		# make failed but the runner reported no failed test (it did not
		# start, crashed, or timed out): one failure for the suite.
		f=1
		pgs_warn "$kind tests on PostgreSQL $v failed without a test summary (exit $rc)"
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SUMMARY+=("PostgreSQL $v $kind$RUN_LABEL: $p passed, $f failed ($((SECONDS - t0)) s)")
	count_run "PostgreSQL $v $kind" "$f"

	if [ "$f" != 0 ]; then
		show_failure "$v" "$kind" "$dir" "$log"
		# keep what explains it: the next run of the suite starts afresh
		[ "$REPEAT" = 1 ] || keep_failure_logs "$v" "$kind" "$dir"
	fi
	scan_server_logs "$dir"
}

# Names (t/NAME.pl) of the TAP files that failed, from prove's "Test Summary
# Report" in log $1.  A file listed there failed when its header says
#   t/001_x.pl   (Wstat: 256 (exited 1) Tests: 47 Failed: 1)
# with a non-zero Wstat or Failed, or when it has "Parse errors" (a broken
# plan); a file listed only for "TODO passed" did not fail.
tap_failed_files() {
	awk '
		/^Test Summary Report/ { in_report = 1; next }
		!in_report { next }
		/^t\/[^ ]+\.pl +\(Wstat: / {
			if (name != "" && bad) print name
			name = $1; sub(/^t\//, "", name); sub(/\.pl$/, "", name)
			bad = ($0 !~ /\(Wstat: 0 / || $0 !~ /Failed: 0\)/)
			next
		}
		/^  Parse errors:/ { bad = 1 }
		/^Files=[0-9]+, Tests=/ { if (name != "" && bad) print name; name = ""; in_report = 0 }
	' "$1" | sort -u
}

# Print what explains a failure: the diffs, the server log, the TAP logs.
show_failure() {
	local v=$1 kind=$2 dir=$3 log=$4 d
	echo
	echo "======== PostgreSQL $v $kind: failure details ========"
	case $kind in
	regress | isolation)
		# pg_regress writes the server log to <outputdir>/log/ (tmp_check*
		# is the data directory, removed at the end).
		local out=.
		[ "$kind" = isolation ] && out=output_iso
		if [ -s "$dir/$out/regression.diffs" ]; then
			echo "---- $out/regression.diffs (first 200 lines) ----"
			head -200 "$dir/$out/regression.diffs"
		fi
		if [ -s "$dir/$out/log/postmaster.log" ]; then
			echo "---- $out/log/postmaster.log (last 50 lines) ----"
			tail -50 "$dir/$out/log/postmaster.log"
		fi
		;;
	tap)
		# The logs of the failed test files ("t/001_x.pl (Wstat: ...)" in
		# prove's summary), or all logs when prove did not say.
		local failed_files=() name
		mapfile -t failed_files < <(tap_failed_files "$log")
		[ ${#failed_files[@]} -gt 0 ] || failed_files=('')
		for name in "${failed_files[@]}"; do
			for d in "$dir"/tmp_check/log/regress_log_"$name"*; do
				[ -s "$d" ] || continue
				echo "---- ${d#"$dir"/} (last 80 lines) ----"
				tail -80 "$d"
			done
			for d in "$dir"/tmp_check/log/"$name"*.log; do
				[ -s "$d" ] || continue
				echo "---- ${d#"$dir"/} (last 30 lines) ----"
				tail -30 "$d"
			done
		done
		;;
	esac
	echo "======== end of PostgreSQL $v $kind failure details ========"
}

# The sanitizer suite: scripts/sanitize-check.sh, which builds (or reuses)
# PostgreSQL 15 with ASan/UBSan, builds the extension with it and runs the
# pg_regress and isolation tests; its last line is "N passed, N failed".
run_sanitize() {
	if [ -n "$SAN_BUILD_PID" ]; then
		# (bounded by the run's time, as a suite is)
		local t0=$SECONDS
		pgs_log "waiting for the sanitizer build beside the suites"
		while kill -0 "$SAN_BUILD_PID" 2>/dev/null &&
			{ [ "$TOTAL_TIMEOUT" = 0 ] || [ $((TOTAL_TIMEOUT - (SECONDS - START))) -gt 120 ]; }; do
			sleep 5
		done
		kill -0 "$SAN_BUILD_PID" 2>/dev/null && kill -- -"$SAN_BUILD_PID" 2>/dev/null
		wait "$SAN_BUILD_PID" ||
			{ pgs_warn "the sanitizer build failed: last lines of its log"; tail -20 "$PGS_BUILD_ROOT/pg15-sanitize-build.log"; }
		pgs_log "the sanitizer build is done ($((SECONDS - t0)) s waited)"
		SAN_BUILD_PID=
	fi
	run_script_suite "PostgreSQL 15 sanitizer (regress + isolation)" pg15-sanitize \
		"$SANITIZE_TIMEOUT" "$PGS_BUILD_ROOT/pg15-sanitize" \
		bash "$PGS_REPO/scripts/sanitize-check.sh"
}

# The chromium suite: scripts/render-report.sh as the test user, with the
# server of version $1 ($2 its pg_config), in $3/render.
run_chromium() {
	local v=$1 pgc=$2 dir=$3 log=$PGS_BUILD_ROOT/pg$1-chromium.log t0=$SECONDS rc p f
	echo
	pgs_log "PostgreSQL $v: the HTML report in headless Chromium (scripts/render-report.sh)"
	if ! command -v chromium >/dev/null && pgs_is_root; then
		pgs_log "installing chromium"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			chromium fonts-dejavu-core >"$log.apt" 2>&1 ||
			pgs_warn "apt-get install chromium failed: $log.apt"
	fi
	suite_time_limit "$SUITE_TIMEOUT" "PostgreSQL $v chromium" || return
	mkdir -p "$dir/render"
	pgs_give_to_user "$dir/render"
	pgs_run_logged "$log" "$LIMIT" "$dir" \
		"${PGS_AS_USER[@]}" env HOME="$dir/render" \
		bash "$PGS_REPO/scripts/render-report.sh" --bindir "$("$pgc" --bindir)" --dir "$dir/render"
	rc=$?
	p=$(grep -c '^ok - ' "$log")
	f=$(grep -c '^not ok - ' "$log")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
		pgs_warn "chromium suite on PostgreSQL $v failed without a result (exit $rc)"
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SUMMARY+=("PostgreSQL $v chromium$RUN_LABEL: $p passed, $f failed ($((SECONDS - t0)) s)")
	count_run "PostgreSQL $v chromium" "$f"
}

# Stress mode: copy the logs and diffs of a failed run aside
# (build/stress-failures/<suite>-<run>/), before the next run removes them.
keep_failure_logs() {
	local v=$1 kind=$2 dir=$3 dest
	dest=$PGS_BUILD_ROOT/stress-failures/pg$v-$kind-run$RUN
	mkdir -p "$dest"
	cp -r "$PGS_BUILD_ROOT/pg$v-$kind.log" "$dir"/regression.diffs "$dir"/output_iso/regression.diffs \
		"$dir"/log "$dir"/output_iso/log "$dir"/tmp_check/log "$dest"/ 2>/dev/null
	pgs_log "failure logs kept in $dest"
}

# The version consistency check (scripts/check-version.sh): the version
# agrees everywhere it is written, and the check's self-test (each source
# broken in turn must be reported).  One test for the check, one per case of
# the self-test.  Cheap, so first.
run_version_check() {
	local log=$PGS_BUILD_ROOT/version-check.log t0=$SECONDS p=0 f=0 line
	echo
	pgs_log "======== version consistency (scripts/check-version.sh) ========"
	{
		bash "$PGS_REPO/scripts/check-version.sh" && echo "check: ok" || echo "check: FAILED"
		bash "$PGS_REPO/scripts/check-version.sh" --self-test
	} >"$log" 2>&1
	cat "$log"
	grep -q '^check: ok$' "$log" && p=1 || f=1
	if line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1) && [ -n "$line" ]; then
		p=$((p + ${line%% passed*}))
		line=${line#*passed, }
		f=$((f + ${line%% failed}))
	else
		f=$((f + 1))
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SUMMARY+=("version consistency: $p passed, $f failed ($((SECONDS - t0)) s)")
}
[ "$SANITIZE" = only ] || [ "$LANE" = yes ] || run_version_check

# A suite that is a script of its own whose last line is "N passed, N
# failed": $1 label, $2 log name, $3 time limit (seconds), $4 directory whose
# leftover servers are stopped afterwards, rest: the command.
run_script_suite() {
	local label=$1 log=$PGS_BUILD_ROOT/$2.log limit=$3 sdir=$4 t0=$SECONDS rc p=0 f=0 line
	shift 4
	echo
	pgs_log "======== $label ($*) ========"
	suite_time_limit "$limit" "$label" || return
	pgs_run_logged "$log" "$LIMIT" "$PGS_REPO" "$@"
	rc=$?
	[ "$rc" = 124 ] && pgs_warn "$label timed out after ${LIMIT}s"
	[ -z "$sdir" ] || pgs_stop_leftover_servers "$sdir"
	if line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1) && [ -n "$line" ]; then
		p=${line%% passed*}
		f=${line#*passed, }
		f=${f%% failed}
	fi
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
		pgs_warn "$label failed without a test summary (exit $rc)"
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SUMMARY+=("$label$RUN_LABEL: $p passed, $f failed ($((SECONDS - t0)) s)")
	count_run "$label" "$f"
}

# The PGXN distribution (scripts/test-pgxn.sh): META.json against the
# spec, make dist, a build of the unpacked zip.  Needs a PostgreSQL to build
# with: the first version's.
if [ "$PGXN" = yes ] && [ ${#VERSIONS[@]} -gt 0 ]; then
	run_script_suite "PGXN distribution" pgxn 900 "" \
		bash "$PGS_REPO/scripts/test-pgxn.sh" "$(pgs_system_pg_config "${VERSIONS[0]}")"
fi

for v in "${VERSIONS[@]}"; do
	echo
	pgs_log "======== PostgreSQL $v ========"
	vstart=$SECONDS
	pgc=$(pgs_target_pg_config "$v") || { FAILED=$((FAILED + 1)); SUMMARY+=("PostgreSQL $v: no usable install"); continue; }
	dir=$PGS_BUILD_ROOT/pg$v
	mapfile -t margs < <(pgs_make_args "$v" "$pgc")

	pgs_lock_install "$pgc"
	if ! pgs_build_install "$v" "$pgc"; then
		pgs_warn "PostgreSQL $v: build or install failed"
		FAILED=$((FAILED + 1))
		SUMMARY+=("PostgreSQL $v: build/install FAILED")
		pgs_unlock_install
		continue
	fi
	for RUN in $(seq "$REPEAT"); do
		[ "$REPEAT" = 1 ] && RUN_LABEL= || RUN_LABEL=" (run $RUN of $REPEAT)"
		run_suite "$v" regress "$dir" "${margs[@]}"
		run_suite "$v" isolation "$dir" "${margs[@]}"
		if [ "$TAP" = tap ] && [ "$v" = 15 ]; then
			if compgen -G "$dir/t/*.pl" >/dev/null; then
				run_suite "$v" tap "$dir" "${margs[@]}"
			else
				pgs_log "PostgreSQL $v: no TAP tests (t/*.pl) yet"
			fi
			[ "$CHROMIUM" = no ] || run_chromium "$v" "$pgc" "$dir"
		fi
	done
	# The Prometheus queries file in a real exporter against a server of
	# this install (scripts/test-prometheus.sh), once per run.
	if [ "$PROMETHEUS" = yes ] && [ "$v" = 15 ]; then
		run_script_suite "Prometheus exporter (PostgreSQL 15)" prometheus 900 "" \
			bash "$PGS_REPO/scripts/test-prometheus.sh" "$pgc"
	fi
	# The installed library must still be ours after the run.
	if ! pgs_check_installed "$v" "$pgc"; then
		FAILED=$((FAILED + 1))
		SUMMARY+=("PostgreSQL $v: installed files changed during the run")
	fi
	pgs_unlock_install
	SUMMARY+=("PostgreSQL $v: $((SECONDS - vstart)) s in total")
done

# The Debian package (scripts/test-debian.sh), after the versions' suites
# (before the sanitizer suite, whose build may still be running): it installs
# postgresql-15-pgsentinel into the system's PostgreSQL 15 for a moment,
# under the same install lock as the suites above, removes it and puts back
# what it found there; nothing is installed into it after.  Root only.
if [ "$DEBIAN" = yes ] && [[ " ${VERSIONS[*]} " == *" 15 "* ]]; then
	if pgs_is_root; then
		run_script_suite "Debian package postgresql-15-pgsentinel" debian 1200 "" \
			bash "$PGS_REPO/scripts/test-debian.sh"
	else
		pgs_log "Debian package: not tested (needs root to install it; --no-debian to say so)"
	fi
fi
join_lane
if [ "$SANITIZE" != no ]; then
	for RUN in $(seq "$REPEAT"); do
		[ "$REPEAT" = 1 ] && RUN_LABEL= || RUN_LABEL=" (run $RUN of $REPEAT)"
		run_sanitize
	done
fi
stop_cpu_load

echo
pgs_log "Summary ($((SECONDS - START)) s)"
printf '  %s\n' "${SUMMARY[@]}"
if [ "$REPEAT" != 1 ]; then
	pgs_log "Stress: runs with a failure, per suite$([ "$CPU_LOAD" = yes ] && echo ", all cores kept busy")"
	for k in "${!RUNS_DONE[@]}"; do
		printf '  %s: %s of %s runs failed\n' "$k" "${RUNS_FAILED[$k]:-0}" "${RUNS_DONE[$k]}"
	done | sort
fi
if [ "$LANE" = yes ]; then
	{ echo "$PASSED $FAILED"; printf '%s\n' "${SUMMARY[@]}"; } >"$LANE_SUMMARY"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
