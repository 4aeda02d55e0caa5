#!/usr/bin/env bash
# scripts/check-version.sh -- the extension's version is written in one place
# and repeated where packagers and readers look; check that they all agree.
#
#   scripts/check-version.sh [DIR]      check the tree at DIR (default: this one)
#   scripts/check-version.sh --self-test
#
# The version is default_version in pgsentinel.control.  It must be:
#   - reachable by an install or update script listed in the Makefile's DATA
#     (pgsentinel--VERSION.sql or pgsentinel--OLD--VERSION.sql);
#   - META.json's "version" and its provides.pgsentinel.version;
#   - the upstream part of the top entry of debian/changelog
#     ("pgsentinel (VERSION-N) ...");
#   - the first "## " heading of CHANGELOG.md ("## VERSION ...");
#   - in the README's title ("# pgsentinel X.Y ..." or "X.Y.Z", X.Y being the
#     version's first two numbers).
# Each disagreement is printed; the exit status is 0 when there is none.
#
# --self-test copies those files into a temporary directory, checks that the
# copy passes, then breaks one source at a time and checks that each break is
# reported (so a check that silently passes everything fails here).  Its last
# line is "N passed, N failed".

set -uo pipefail

# Print the version of each source of tree $1, one "source: version" a line;
# a source that cannot be read prints "source: (missing ...)".
versions_of() {
	local dir=$1 v
	v=$(sed -nE "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'([^']*)'.*/\1/p" \
		"$dir/pgsentinel.control" 2>/dev/null | head -1)
	echo "control: ${v:-(missing default_version in pgsentinel.control)}"

	if [ -f "$dir/META.json" ]; then
		python3 - "$dir/META.json" <<'EOF'
import json, sys
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        meta = json.load(f)
except (OSError, ValueError) as e:
    print("META.json version: (unreadable: %s)" % e)
    print("META.json provides.pgsentinel.version: (unreadable)")
    sys.exit(0)
print("META.json version: %s" % meta.get("version", "(missing)"))
prov = meta.get("provides", {}).get("pgsentinel", {})
print("META.json provides.pgsentinel.version: %s" % prov.get("version", "(missing)"))
EOF
	else
		echo "META.json version: (missing META.json)"
	fi

	v=$(sed -nE '1s/^pgsentinel \(([^)-]+)(-[^)]*)?\).*/\1/p' "$dir/debian/changelog" 2>/dev/null)
	echo "debian/changelog: ${v:-(missing or unparsable first line of debian/changelog)}"

	v=$(sed -nE 's/^## +([0-9][0-9A-Za-z.]*).*/\1/p' "$dir/CHANGELOG.md" 2>/dev/null | head -1)
	echo "CHANGELOG.md: ${v:-(missing a \"## VERSION\" heading in CHANGELOG.md)}"

	v=$(sed -nE '1s/^# +pgsentinel +([0-9]+\.[0-9]+(\.[0-9]+)?)([^0-9.].*)?$/\1/p' "$dir/README.md" 2>/dev/null)
	echo "README.md title: ${v:-(missing \"# pgsentinel X.Y\" title in README.md)}"
}

# The files of the Makefile's DATA and DATA_built lists in tree $1, one a
# line (a built script is assembled from sql-src/: the full script of the
# version from sql-src/install/*.sql, the update to it from sql-src/update/).
makefile_data() {
	awk '
		/^DATA(_built)?[[:space:]]*[+:]?=/ { in_data = 1; sub(/^DATA(_built)?[[:space:]]*[+:]?=/, "") }
		in_data {
			cont = sub(/\\[[:space:]]*$/, "")
			n = split($0, w, /[[:space:]]+/)
			for (i = 1; i <= n; i++) if (w[i] != "") print w[i]
			if (!cont) in_data = 0
		}
	' "$1/Makefile" 2>/dev/null
}

# Files not written yet, whose absence is not an error (each one is added to
# the checks as it arrives).
OPTIONAL_FILES=""
optional() { [[ " $OPTIONAL_FILES " == *" $1 "* ]]; }

# Check tree $1; print what disagrees.  Returns 0 when everything agrees.
check_tree() {
	local dir=$1 version line src v bad=0 f found= checked=()
	version=$(versions_of "$dir" | sed -n 's/^control: //p')
	if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
		echo "pgsentinel.control: default_version is '$version', not X.Y.Z"
		return 1
	fi
	while IFS= read -r line; do
		src=${line%%: *}
		v=${line#*: }
		case $src in
		control) continue ;;
		META.json*)
			[ -f "$dir/META.json" ] || optional META.json || { bad=1; continue; }
			[ -f "$dir/META.json" ] || continue
			[ "$v" = "$version" ] && { checked+=("$src"); continue; } ;;
		debian/changelog)
			[ -f "$dir/debian/changelog" ] || optional debian/changelog || { bad=1; continue; }
			[ -f "$dir/debian/changelog" ] || continue
			[ "$v" = "$version" ] && { checked+=("$src"); continue; } ;;
		"README.md title")
			# "2.1" or "2.1.0" for 2.1.0
			[ "$v" = "$version" ] || [ "$v" = "${version%.*}" ] && { checked+=("$src"); continue; } ;;
		*) [ "$v" = "$version" ] && { checked+=("$src"); continue; } ;;
		esac
		echo "$src: $v, but pgsentinel.control says $version"
		bad=1
	done < <(versions_of "$dir")

	# An unreleased version (CHANGELOG.md: "## X.Y.Z ... unreleased") is not
	# "stable" on PGXN, and a released one is.
	local status
	status=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("release_status", "stable"))' \
		"$dir/META.json" 2>/dev/null)
	if sed -nE '0,/^## /{/^## /p}' "$dir/CHANGELOG.md" 2>/dev/null | grep -qi unreleased; then
		[ "$status" != stable ] ||
			{ echo "META.json: release_status is stable, but CHANGELOG.md says $version is unreleased"; bad=1; }
	elif [ -n "$status" ] && [ "$status" != stable ]; then
		echo "META.json: release_status is $status, but CHANGELOG.md says $version is released"
		bad=1
	fi

	# ... and debian/changelog's top entry is UNRELEASED while it is not
	# released.
	local dist
	dist=$(sed -nE '1s/^[^ ]+ \([^)]*\) +([^;]+);.*/\1/p' "$dir/debian/changelog" 2>/dev/null)
	if [ "$status" != stable ] && [ -n "$dist" ] && [ "$dist" != UNRELEASED ]; then
		echo "debian/changelog: the $version entry is for '$dist', but META.json's release_status is $status (not released)"
		bad=1
	elif [ "$status" = stable ] && [ "$dist" = UNRELEASED ]; then
		echo "debian/changelog: the $version entry is UNRELEASED, but META.json's release_status is stable"
		bad=1
	fi

	for f in $(makefile_data "$dir"); do
		case $f in
		pgsentinel--"$version".sql | pgsentinel--*--"$version".sql)
			local parts=$dir/sql-src/install
			[ "$f" = pgsentinel--"$version".sql ] || parts=$dir/sql-src/update
			if [ -f "$dir/$f" ] || compgen -G "$parts/*.sql" >/dev/null; then
				found=$f
			else
				echo "Makefile: DATA lists $f, which does not exist"; bad=1
			fi ;;
		esac
	done
	if [ -z "$found" ]; then
		echo "Makefile: no install or update script to $version in DATA"
		bad=1
	fi
	[ "$bad" = 0 ] && echo "version $version: pgsentinel.control, Makefile ($found), $(IFS=,; echo "${checked[*]}" | sed 's/,/, /g') agree"
	return $bad
}

# Break one thing at a time in a copy of tree $1 and check that each break is
# reported.
self_test() {
	local src=$1 tmp pass=0 fail=0 name
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	copy() {
		rm -rf "$tmp/t"
		mkdir -p "$tmp/t/debian"
		cp "$src"/{pgsentinel.control,META.json,CHANGELOG.md,README.md,Makefile} "$tmp/t/" 2>/dev/null
		cp "$src"/pgsentinel--*.sql "$tmp/t/" 2>/dev/null
		[ -d "$src/sql-src" ] && cp -r "$src/sql-src" "$tmp/t/"
		cp "$src/debian/changelog" "$tmp/t/debian/" 2>/dev/null
	}
	expect() { # $1 pass|fail, $2 name
		local out rc
		out=$(check_tree "$tmp/t" 2>&1)
		rc=$?
		if { [ "$1" = pass ] && [ $rc = 0 ]; } || { [ "$1" = fail ] && [ $rc != 0 ]; }; then
			echo "ok: $2"
			pass=$((pass + 1))
		else
			echo "FAILED: $2 (expected the check to $1; it said:)"
			printf '  %s\n' "$out"
			fail=$((fail + 1))
		fi
	}
	bump() { sed -i -E "$1" "$tmp/t/$2"; }

	copy; expect pass "the tree as it is"
	copy; bump "s/^(default_version = ')[^']*/\\19.9.9/" pgsentinel.control; expect fail "control file changed alone"
	[ -f "$src/META.json" ] && { copy; bump '0,/"version"/s/("version" *: *")[^"]*/\19.9.9/' META.json; expect fail "META.json version changed"; }
	[ -f "$src/META.json" ] && { copy; python3 - "$tmp/t/META.json" <<'EOF'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
m["provides"]["pgsentinel"]["version"] = "9.9.9"
json.dump(m, open(p, "w"), indent=3)
EOF
	expect fail "META.json provides version changed"; }
	copy; bump 's/"release_status": *"[a-z]*"/"release_status": "stable"/' META.json
	if grep -qi '^## .*unreleased' "$tmp/t/CHANGELOG.md"; then
		expect fail "META.json release_status stable while CHANGELOG.md says unreleased"
	fi
	copy; bump '0,/^## /s/^(## .*)unreleased/\1released/I' CHANGELOG.md
	if ! grep -qi '^## .*unreleased' "$tmp/t/CHANGELOG.md" && ! grep -q '"release_status": *"stable"' "$tmp/t/META.json"; then
		expect fail "CHANGELOG.md released while META.json release_status is not stable"
	fi
	copy; bump '1s/UNRELEASED;/unstable;/' debian/changelog
	if ! grep -q '"release_status": *"stable"' "$tmp/t/META.json"; then
		expect fail "debian/changelog released while META.json is not stable"
	fi
	[ -f "$src/debian/changelog" ] && { copy; bump '1s/\(([^)-]+)/(9.9.9/' debian/changelog; expect fail "debian/changelog top version changed"; }
	copy; bump '0,/^## /s/^## +[0-9.]+/## 9.9.9/' CHANGELOG.md; expect fail "CHANGELOG.md top heading changed"
	copy; bump '1s/pgsentinel [0-9.]+/pgsentinel 9.9/' README.md; expect fail "README.md title changed"
	copy; rm -rf "$tmp/t"/pgsentinel--*"$(versions_of "$tmp/t" | sed -n 's/^control: //p')".sql \
		"$tmp/t"/sql-src/install "$tmp/t"/sql-src/update
	expect fail "install and update scripts to the version missing"
	optional META.json || { copy; rm -f "$tmp/t/META.json"; expect fail "META.json missing"; }
	optional debian/changelog || { copy; rm -f "$tmp/t/debian/changelog"; expect fail "debian/changelog missing"; }
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${1:-} in
--self-test) self_test "$ROOT" ;;
-h | --help) sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
"") check_tree "$ROOT" ;;
*) check_tree "$1" ;;
esac
