# shellcheck shell=bash
# scripts/lib.sh -- helpers shared by the test scripts (scripts/test-all.sh,
# scripts/demo.sh, scripts/sanitize-check.sh, ...).
#
# Sourced, never run.  It sources scripts/provision.sh, which gets the
# PostgreSQL versions we test against (15 to 18) and the build and test
# dependencies onto the machine.  This file knows how to:
#   - run things as an unprivileged user (PostgreSQL refuses to run as root);
#   - run a suite under a time limit with its output logged, and stop the
#     servers it leaves behind;
#   - build the extension for one version in its own copy of the sources
#     (build/pgNN/), because two in-tree PGXS builds would share the .o files;
#   - install it into that PostgreSQL, or into a private relocated copy of it.
#
# Settings (environment), and PGSENTINEL_DEPS_DIR of scripts/provision.sh:
#   PGSENTINEL_TEST_USER   user that runs the throwaway servers when we are
#                          root (default pgsentinel_test, created if missing)
#   PGSENTINEL_BUILD_DIR   build root (default <repo>/build)
#   PGSENTINEL_PRIVATE_INSTALL=1
#                          never install into the system PostgreSQL, even as
#                          root: use a private relocated copy (see
#                          pgs_private_copy in scripts/provision.sh).
#                          Automatic for a normal user whose PostgreSQL
#                          directories are not writable.

PGS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGS_TEST_USER=${PGSENTINEL_TEST_USER:-pgsentinel_test}
PGS_BUILD_ROOT=${PGSENTINEL_BUILD_DIR:-$PGS_REPO/build}

# Settings of a user's shell must not leak into the throwaway servers.
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGSERVICE PGOPTIONS PGDATA
umask 022

pgs_log() { printf '==> %s\n' "$*"; }
pgs_warn() { printf 'WARNING: %s\n' "$*" >&2; }
pgs_die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }
pgs_is_root() { [ "$(id -u)" = 0 ]; }

# shellcheck source=scripts/provision.sh
. "$(dirname "${BASH_SOURCE[0]}")/provision.sh"

# ---------------------------------------------------------------------------
# The unprivileged user
# ---------------------------------------------------------------------------

# As root: create $PGS_TEST_USER when missing.  PGS_AS_USER becomes the prefix
# that runs a command as that user (empty when we are not root).
PGS_AS_USER=()
pgs_setup_user() {
	if ! pgs_is_root; then
		PGS_AS_USER=()
		return 0
	fi
	if ! id -u "$PGS_TEST_USER" >/dev/null 2>&1; then
		pgs_log "creating user $PGS_TEST_USER"
		useradd --system --user-group --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$PGS_TEST_USER" ||
			pgs_die "could not create user $PGS_TEST_USER"
	fi
	PGS_AS_USER=(runuser -u "$PGS_TEST_USER" --)
}

# Run a command as the unprivileged user (or as ourselves when not root),
# with HOME set to a directory that user owns ($1).
pgs_as_user_in() {
	local home=$1
	shift
	"${PGS_AS_USER[@]}" env HOME="$home" "$@"
}

# Stop any server left running under directory $1 (a suite killed by its
# timeout leaves its throwaway server behind).  Only servers whose data
# directory is ours, by the pid in their postmaster.pid.
pgs_stop_leftover_servers() {
	local dir=$1 pidfile pid
	while IFS= read -r pidfile; do
		pid=$(head -1 "$pidfile" 2>/dev/null)
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			pgs_warn "stopping leftover server $pid ($(dirname "$pidfile"))"
			kill -QUIT "$pid" 2>/dev/null
		fi
	done < <(find "$dir" -name postmaster.pid 2>/dev/null)
}

# Signal handler of the suite runners: stop the running suite (the process
# group $SUITE_PID of its timeout, see pgs_run_logged) and any server left
# under directory $1, then exit.
pgs_interrupted() {
	trap - INT TERM
	if [ -n "${SUITE_PID:-}" ]; then
		kill -TERM -- "-$SUITE_PID" 2>/dev/null
		wait "$SUITE_PID" 2>/dev/null
	fi
	[ -n "$1" ] && pgs_stop_leftover_servers "$1"
	echo "interrupted"
	exit 130
}

# Run "$@" in directory $3 under a time limit of $2 seconds, with its output
# in log $1 and followed live on our stdout.  timeout puts it in a process
# group of its own, so that a timeout or an interrupt (kill -- -$SUITE_PID,
# by the caller's signal handler) stops it and its children together.
# Returns the command's status (124 on timeout).
pgs_run_logged() {
	local log=$1 limit=$2 dir=$3 rc tail_pid
	shift 3
	: >"$log"
	timeout -k 30 "$limit" env -C "$dir" "$@" >"$log" 2>&1 &
	SUITE_PID=$!
	tail -n +1 -f --pid="$SUITE_PID" "$log" &
	tail_pid=$!
	wait "$SUITE_PID"
	rc=$?
	wait "$tail_pid"
	SUITE_PID=
	return "$rc"
}

# Give a directory we created to the unprivileged user.
pgs_give_to_user() {
	if pgs_is_root; then
		chown -R "$PGS_TEST_USER:" "$@"
	fi
}

# Make sure the unprivileged user can write the build root.  A repository
# under /root is not reachable by that user: build in /var/tmp instead.
# The probe is this process's own: scripts that run at once (the two lanes
# of test-all.sh, the sanitizer build) must not remove each other's.
pgs_prepare_build_root() {
	mkdir -p "$PGS_BUILD_ROOT" || pgs_die "cannot create $PGS_BUILD_ROOT"
	if pgs_is_root; then
		local probe=$PGS_BUILD_ROOT/.user-probe.$$
		mkdir -p "$probe"
		pgs_give_to_user "$probe"
		if ! runuser -u "$PGS_TEST_USER" -- test -w "$probe"; then
			rmdir "$probe"
			PGS_BUILD_ROOT=/var/tmp/pgsentinel-build/$(printf '%s' "$PGS_REPO" | md5sum | cut -c1-12)
			pgs_warn "$PGS_TEST_USER cannot reach $PGS_REPO; building in $PGS_BUILD_ROOT"
			mkdir -p "$PGS_BUILD_ROOT"
			chmod 755 /var/tmp/pgsentinel-build
		else
			rmdir "$probe"
		fi
	fi
}

# ---------------------------------------------------------------------------
# Building and installing the extension
# ---------------------------------------------------------------------------

# Decide where the extension gets installed for version $1 and print the
# pg_config to use: the system one when we may write its directories, else a
# private copy under the build root.
pgs_target_pg_config() {
	local v=$1 src
	src=$(pgs_system_pg_config "$v")
	[ -x "$src" ] || pgs_die "PostgreSQL $v not found ($src)"
	if [ "${PGSENTINEL_PRIVATE_INSTALL:-0}" != 1 ]; then
		if pgs_is_root || { [ -w "$("$src" --pkglibdir)" ] &&
			[ -w "$("$src" --sharedir)/extension" ]; }; then
			echo "$src"
			return 0
		fi
	fi
	pgs_private_copy "$src" "$PGS_BUILD_ROOT/pg$v-install"
}

# make arguments for version $1 with pg_config $2.
pgs_make_args() {
	local v=$1 pgc=$2
	printf '%s\n' "PG_CONFIG=$pgc"
	if [ "$v" = 18 ]; then
		printf '%s\n' "CFLAGS=$PGS_PG18_CFLAGS"
	fi
}

# Copy the source files (tracked and new, not ignored, no build products)
# into a fresh directory $1.
pgs_copy_sources() {
	local dest=$1
	rm -rf "$dest"
	mkdir -p "$dest"
	if git -C "$PGS_REPO" -c safe.directory="$PGS_REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$PGS_REPO" &&
			git -c safe.directory="$PGS_REPO" ls-files -z --cached --others --exclude-standard |
			tr '\0' '\n' |
			grep -Ev '^(build|scripts|bench|\.ci)/|(^|/)\.git|\.(o|bc|so)$' |
			while IFS= read -r f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
			tar --null -T - -cf -) | tar -xf - -C "$dest"
	else
		(cd "$PGS_REPO" &&
			tar -cf - --exclude='*.o' --exclude='*.bc' --exclude='*.so' \
				Makefile ./*.control ./*.sql sql-src src sql expected specs t test prometheus 2>/dev/null) |
			tar -xf - -C "$dest"
	fi
	[ -f "$dest/Makefile" ] || pgs_die "could not copy the sources to $dest"
}

# Build the extension for version $1 with pg_config $2 in $PGS_BUILD_ROOT/pgNN
# (as the unprivileged user), then install it (as root, or as ourselves into a
# writable/private install).  Output goes to stdout.  Returns non-zero on
# failure.
pgs_build_install() {
	local v=$1 pgc=$2 dir=$PGS_BUILD_ROOT/pg$1 margs
	mapfile -t margs < <(pgs_make_args "$v" "$pgc")
	pgs_copy_sources "$dir"
	pgs_give_to_user "$dir"
	pgs_log "building for $("$pgc" --version) in $dir"
	(cd "$dir" && pgs_as_user_in "$dir" make -s -j"$(nproc)" "${margs[@]}") || return 1
	pgs_log "installing into $("$pgc" --pkglibdir)"
	(cd "$dir" && make -s "${margs[@]}" install) || return 1
	pgs_check_installed "$v" "$pgc"
}

# The make-free check of an install: the files PostgreSQL will load are the
# ones we just built (guards against a half-done install and against another
# checkout installing its own build into the same PostgreSQL meanwhile).
pgs_check_installed() {
	local v=$1 pgc=$2 dir=$PGS_BUILD_ROOT/pg$1 f ok=0 ctl
	cmp -s "$dir/pgsentinel.so" "$("$pgc" --pkglibdir)/pgsentinel.so" ||
		{ pgs_warn "installed pgsentinel.so differs from $dir/pgsentinel.so"; ok=1; }
	for ctl in "$dir"/*.control; do
		f=$("$pgc" --sharedir)/extension/$(basename "$ctl")
		cmp -s "$ctl" "$f" || { pgs_warn "installed $f differs from $ctl"; ok=1; }
	done
	for f in "$dir"/pgsentinel--*.sql; do
		[ -e "$f" ] || continue
		cmp -s "$f" "$("$pgc" --sharedir)/extension/$(basename "$f")" ||
			{ pgs_warn "installed $(basename "$f") differs from $f"; ok=1; }
	done
	return $ok
}

# Hold an exclusive lock on the PostgreSQL install of pg_config $1 while we
# install into it and test it, so two checkouts testing at once do not swap
# each other's pgsentinel.so.  Sets PGS_LOCK_FD.
pgs_lock_install() {
	local key lock
	PGS_LOCK_FD=
	case $("$1" --pkglibdir) in
	"$PGS_BUILD_ROOT"/*) return 0 ;; # a private copy: ours alone
	esac
	key=$(printf '%s' "$("$1" --pkglibdir)" | md5sum | cut -c1-12)
	lock=/tmp/pgsentinel-install-$key.lock
	if ! exec {PGS_LOCK_FD}>>"$lock"; then
		pgs_warn "cannot open $lock; testing without the install lock"
		PGS_LOCK_FD=
		return 0
	fi
	if ! flock -n "$PGS_LOCK_FD"; then
		pgs_log "waiting for another test run using $("$1" --pkglibdir) ($lock)"
		flock -w 3600 "$PGS_LOCK_FD" || pgs_die "timed out waiting for $lock"
	fi
}
pgs_unlock_install() {
	[ -n "${PGS_LOCK_FD:-}" ] && exec {PGS_LOCK_FD}>&-
	PGS_LOCK_FD=
}
