#!/usr/bin/env bash
# scripts/test-debian.sh -- build the Debian package postgresql-15-pgsentinel
# from a clean copy of the tree, install it, and use it.
#
#   scripts/test-debian.sh            (as root)
#
# Tests (one line "ok: ..." or "FAILED: ..." each, then "N passed, N failed"):
#   1. dpkg-buildpackage -us -uc -b builds it, as the unprivileged user, in a
#      temporary copy of the committed tree (git archive HEAD: uncommitted
#      changes are not in it; the work tree is never built in).  The build
#      runs the pg_regress and isolation tests against the package's files
#      (debian/rules, override_dh_pgxs_test);
#   2. the .deb holds the library, the control file and every SQL script of
#      the Makefile's DATA, under PostgreSQL 15's directories;
#   3. dpkg -i installs it and dpkg --verify finds its files intact;
#   4. a throwaway cluster of the system's PostgreSQL 15, run by the
#      unprivileged user on a free port of 127.0.0.1 with its own socket
#      directory and shared_preload_libraries = pgsentinel, runs
#      CREATE EXTENSION pgsentinel (the control file's version) and samples a
#      session (polled, 60 s deadline);
#   5. the library that server loaded (/proc/PID/maps) is the packaged one:
#      dpkg -S names the package, and it has the checksum of the .deb's file;
#   6. dpkg -P removes it, leaving no pgsentinel file in PostgreSQL 15.
#
# The package installs into /usr/lib/postgresql/15 and /usr/share/postgresql/15,
# where `scripts/test-all.sh` without --private-install installs its builds:
# this holds the same install lock (scripts/lib.sh, pgs_lock_install) for
# the whole run, saves the pgsentinel files found there that no package owns
# and puts them back after removing the package, so a build installed by
# hand or by test-all is left as it was.

set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pgs_is_root || pgs_die "scripts/test-debian.sh installs a package: run it as root"

PKG=postgresql-15-pgsentinel
PGBIN=/usr/lib/postgresql/15/bin
PASS=0
FAIL=0
ok() { echo "ok: $*"; PASS=$((PASS + 1)); }
failed() { echo "FAILED: $*"; FAIL=$((FAIL + 1)); }

# What building and testing need: the PostgreSQL packaging tools, and
# PostgreSQL 15 with pg_stat_statements.
missing=()
for p in debhelper dpkg-dev postgresql-server-dev-all postgresql-15 postgresql-server-dev-15 postgresql-contrib libzstd-dev make gcc; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	# no "main" cluster from the postgresql-15 package: nothing uses one
	if [ ! -e /etc/postgresql-common/createcluster.conf ] || ! grep -rqs 'create_main_cluster' /etc/postgresql-common/createcluster.d/; then
		mkdir -p /etc/postgresql-common/createcluster.d
		echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/pgsentinel-no-main.conf
	fi
	pgs_apt_install "${missing[@]}"
fi
pgs_setup_user

VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$PGS_REPO/pgsentinel.control")
DEBVERSION=$(sed -nE '1s/^pgsentinel \(([^)]+)\).*/\1/p' "$PGS_REPO/debian/changelog")
ARCH=$(dpkg --print-architecture)
TMP=$(mktemp -d /tmp/pgsentinel-deb.XXXXXX)
chmod 755 "$TMP"
SRC=$TMP/pgsentinel-$VERSION
DEB=$TMP/${PKG}_${DEBVERSION}_$ARCH.deb
DATA=$TMP/data
SOCK=$TMP/sock
SAVED=$TMP/saved-files.tar
INSTALLED=

cleanup() {
	if [ -f "$DATA/postmaster.pid" ]; then
		pgs_as_user_in "$TMP" "$PGBIN/pg_ctl" -D "$DATA" -m immediate stop >/dev/null 2>&1
	fi
	if [ -n "$INSTALLED" ]; then
		dpkg -P "$PKG" >/dev/null 2>&1
		INSTALLED=
	fi
	[ -s "$SAVED" ] && tar -xpf "$SAVED" -C /
	rm -f "$SAVED"
	pgs_unlock_install
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
	cleanup
	trap - EXIT
	echo "$PASS passed, $FAIL failed"
	[ "$FAIL" = 0 ]
	exit $?
}

# --- 1: build ----------------------------------------------------------------

pgs_log "building $PKG $DEBVERSION from git archive HEAD in $SRC"
mkdir -p "$SRC"
git -C "$PGS_REPO" -c safe.directory="$PGS_REPO" archive --format=tar HEAD | tar -xf - -C "$SRC" ||
	pgs_die "git archive HEAD failed"
pgs_give_to_user "$TMP"
t0=$SECONDS
if (cd "$SRC" && pgs_as_user_in "$TMP" env DEB_BUILD_OPTIONS="parallel=$(nproc)" \
	dpkg-buildpackage -us -uc -b) >"$TMP/build.log" 2>&1 && [ -f "$DEB" ]; then
	ok "dpkg-buildpackage -us -uc -b built $(basename "$DEB") in $((SECONDS - t0)) s ($(grep -Eo 'All [0-9]+ tests passed' "$TMP/build.log" | paste -sd, | sed 's/,/, /') in the build)"
	grep -E '^(test |     |ok |not ok )|tests passed|installcheck' "$TMP/build.log" | head -40
else
	failed "dpkg-buildpackage failed (last 80 lines of its log):"
	tail -80 "$TMP/build.log"
	for d in "$SRC"/build-*/regression.diffs "$SRC"/build-*/output_iso/regression.diffs; do
		[ -s "$d" ] && { echo "---- $d ----"; head -100 "$d"; }
	done
	finish
fi

# --- 2: contents ---------------------------------------------------------------

contents=$(dpkg-deb -c "$DEB" | awk '{print $NF}' | sed 's|^\./|/|')
mapfile -t sqls < <(cd "$PGS_REPO" && make -s --no-print-directory -f Makefile -f - PG_CONFIG="$PGBIN/pg_config" print-data <<'EOF'
print-data:
	@printf '%s\n' $(DATA)
EOF
)
want=(/usr/lib/postgresql/15/lib/pgsentinel.so /usr/share/postgresql/15/extension/pgsentinel.control)
for f in "${sqls[@]}"; do want+=("/usr/share/postgresql/15/extension/$f"); done
absent=()
for f in "${want[@]}"; do grep -qxF "$f" <<<"$contents" || absent+=("$f"); done
if [ ${#sqls[@]} -gt 0 ] && [ ${#absent[@]} -eq 0 ]; then
	ok "the .deb holds pgsentinel.so, pgsentinel.control and the ${#sqls[@]} SQL scripts of DATA"
else
	failed "the .deb lacks: ${absent[*]:-the SQL scripts (none found in DATA)}"
fi

# --- 3: install ----------------------------------------------------------------

pgs_lock_install "$PGBIN/pg_config"
# pgsentinel files that a `make install` left there and no package owns:
# kept aside, put back at the end.
mapfile -t unowned < <(for f in /usr/lib/postgresql/15/lib/pgsentinel.so /usr/lib/postgresql/15/lib/bitcode/pgsentinel.index.bc \
	/usr/share/postgresql/15/extension/pgsentinel.control /usr/share/postgresql/15/extension/pgsentinel--*.sql \
	/usr/lib/postgresql/15/lib/bitcode/pgsentinel; do
	[ -e "$f" ] && ! dpkg -S "$f" >/dev/null 2>&1 && echo "${f#/}"
done)
if [ ${#unowned[@]} -gt 0 ]; then
	pgs_log "keeping aside ${#unowned[@]} pgsentinel files no package owns (put back at the end)"
	tar -cpf "$SAVED" -C / "${unowned[@]}" || pgs_die "could not save the installed pgsentinel files"
	for f in "${unowned[@]}"; do rm -rf "/${f:?}"; done
fi
INSTALLED=1 # from here on, cleanup purges it, even half installed
if dpkg -i "$DEB" >"$TMP/dpkg.log" 2>&1; then
	if dpkg --verify "$PKG" >>"$TMP/dpkg.log" 2>&1; then
		ok "dpkg -i installed $PKG $(dpkg-query -W -f '${Version}' "$PKG"); dpkg --verify finds its files intact"
	else
		failed "dpkg --verify $PKG reports changed files:"
		cat "$TMP/dpkg.log"
	fi
else
	failed "dpkg -i failed:"
	cat "$TMP/dpkg.log"
	finish
fi

# --- 4: a cluster that uses it -------------------------------------------------

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$SOCK"
pgs_give_to_user "$SOCK"
psql_u() { pgs_as_user_in "$TMP" "$PGBIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$port" -d postgres "$@"; }
cluster_ok=
if pgs_as_user_in "$TMP" "$PGBIN/initdb" -D "$DATA" -A trust -U postgres --no-sync >"$TMP/initdb.log" 2>&1; then
	cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$SOCK'
shared_preload_libraries = 'pg_stat_statements,pgsentinel'
pgsentinel_ash.sampling_period = 0.1
EOF
	if pgs_as_user_in "$TMP" "$PGBIN/pg_ctl" -D "$DATA" -l "$TMP/server.log" -w -t 60 start >/dev/null 2>&1; then
		cluster_ok=1
	fi
fi
if [ -n "$cluster_ok" ] &&
	ext=$(psql_u -U postgres -c 'CREATE EXTENSION pg_stat_statements' -c 'CREATE EXTENSION pgsentinel' \
		-c "SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel'" 2>&1) &&
	[ "$ext" = "$VERSION" ]; then
	# A session sleeping until it is seen in the history.
	pgs_as_user_in "$TMP" env PGAPPNAME=pgs_deb_probe "$PGBIN/psql" -X -q -h "$SOCK" -p "$port" -U postgres \
		-d postgres -c 'SELECT pg_sleep(120)' >/dev/null 2>&1 &
	probe=$!
	seen=0
	for _ in $(seq 600); do
		seen=$(psql_u -U postgres -c "SELECT count(*) FROM pg_active_session_history WHERE application_name = 'pgs_deb_probe'" 2>/dev/null)
		[ "${seen:-0}" -gt 0 ] 2>/dev/null && break
		sleep 0.1
	done
	psql_u -U postgres -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgs_deb_probe'" >/dev/null 2>&1
	wait "$probe" 2>/dev/null
	if [ "${seen:-0}" -gt 0 ] 2>/dev/null; then
		ok "a cluster on 127.0.0.1:$port preloading the package: CREATE EXTENSION pgsentinel $ext, a session sampled ($seen rows; $(psql_u -U postgres -c 'SELECT samples_taken FROM pgsentinel_status()') samples taken)"
	else
		failed "no sample of the probe session within 60 s; pgsentinel_status():"
		psql_u -U postgres -x -c 'SELECT * FROM pgsentinel_status()'
	fi
else
	failed "the cluster did not start or CREATE EXTENSION failed: ${ext:-}"
	tail -20 "$TMP/initdb.log" "$TMP/server.log" 2>/dev/null
fi

# --- 5: the packaged library is the one loaded ---------------------------------

pid=$(head -1 "$DATA/postmaster.pid" 2>/dev/null)
loaded=$(grep -o '/[^ ]*pgsentinel\.so' "/proc/${pid:-0}/maps" 2>/dev/null | sort -u)
if [ -n "$loaded" ] && [ "$(wc -l <<<"$loaded")" = 1 ]; then
	owner=$(dpkg -S "$loaded" 2>/dev/null | cut -d: -f1)
	sum_loaded=$(sha256sum <"$loaded" | cut -d' ' -f1)
	sum_deb=$(dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - ".$loaded" | sha256sum | cut -d' ' -f1)
	if [ "$owner" = "$PKG" ] && [ "$sum_loaded" = "$sum_deb" ]; then
		ok "the server loaded $loaded: owned by $owner, sha256 ${sum_loaded:0:16}... as in the .deb"
	else
		failed "the server loaded $loaded, owned by '${owner:-no package}', sha256 $sum_loaded (the .deb's: $sum_deb)"
	fi
else
	failed "cannot tell which pgsentinel.so the server (pid ${pid:-?}) loaded: '${loaded}'"
fi
if [ -f "$DATA/postmaster.pid" ]; then
	pgs_as_user_in "$TMP" "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1
fi
grep -E 'PANIC|TRAP:|terminated by signal' "$TMP/server.log" 2>/dev/null && failed "the server log reports a crash"

# --- 6: removal ----------------------------------------------------------------

if dpkg -P "$PKG" >"$TMP/dpkg-remove.log" 2>&1; then
	INSTALLED=
	left=$(find /usr/lib/postgresql/15/lib /usr/share/postgresql/15/extension -name 'pgsentinel*' 2>/dev/null)
	if [ -z "$left" ]; then
		ok "dpkg -P removed $PKG and every pgsentinel file under PostgreSQL 15"
	else
		failed "dpkg -P left: $left"
	fi
else
	failed "dpkg -P $PKG failed:"
	cat "$TMP/dpkg-remove.log"
fi
finish
