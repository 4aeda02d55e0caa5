#!/usr/bin/env bash
# scripts/test-pgxn.sh -- the PGXN distribution: META.json against the PGXN
# meta spec, and `make dist`.
#
#   scripts/test-pgxn.sh [PG_CONFIG]
#
# Tests (one line "ok: ..." or "FAILED: ..." each, then "N passed, N failed"):
#   1. META.json is valid: pgxn_meta, the PGXN project's own validator of
#      the meta spec (JSON schemas of spec 1.0.0; crates.io package
#      pgxn_meta, built with cargo once into $PGSENTINEL_DEPS_DIR/pgxn_meta);
#   2. the validator rejects a META.json without a maintainer and one with an
#      unknown licence (so test 1 cannot pass by validating nothing);
#   3. `make dist` writes pgsentinel-VERSION.zip, VERSION being the control
#      file's, with every file under pgsentinel-VERSION/, META.json valid,
#      and the files a build needs: Makefile, control, LICENSE, every script
#      of DATA and every source of OBJS; nothing of .ci/;
#   4. the unpacked distribution builds with warnings as errors (PG_CONFIG,
#      default PostgreSQL 15's), as the unprivileged user.
# `make dist` archives the committed tree (HEAD): uncommitted changes are
# not in it.

set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PGXN_META_VERSION=0.7.0
PGXN_META_DIR=$PGS_DEPS_DIR/pgxn_meta
PGXN_META=$PGXN_META_DIR/bin/pgxn_meta
PG_CONFIG=${1:-$PGS_PG15_CONFIG}

PASS=0
FAIL=0
ok() { echo "ok: $*"; PASS=$((PASS + 1)); }
failed() { echo "FAILED: $*"; FAIL=$((FAIL + 1)); }
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" = 0 ]; exit $?; }

# The validator: built from crates.io with cargo (root only), once.
ensure_validator() {
	[ -x "$PGXN_META" ] && "$PGXN_META" --version 2>/dev/null | grep -q "$PGXN_META_VERSION" && return 0
	local cargo
	cargo=$(command -v cargo || echo "${HOME:-/root}/.cargo/bin/cargo")
	if ! pgs_is_root; then
		pgs_warn "pgxn_meta $PGXN_META_VERSION missing; as root: cargo install --locked --version $PGXN_META_VERSION --root $PGXN_META_DIR pgxn_meta"
		return 1
	fi
	if [ ! -x "$cargo" ]; then
		pgs_warn "cargo not found: cannot build the PGXN validator pgxn_meta"
		return 1
	fi
	pgs_log "cargo install pgxn_meta $PGXN_META_VERSION into $PGXN_META_DIR (about a minute, once)"
	mkdir -p "$PGS_DEPS_DIR"
	"$cargo" install --quiet --locked --version "$PGXN_META_VERSION" --root "$PGXN_META_DIR.tmp.$$" pgxn_meta ||
		{ rm -rf "$PGXN_META_DIR.tmp.$$"; return 1; }
	rm -rf "$PGXN_META_DIR"
	mv "$PGXN_META_DIR.tmp.$$" "$PGXN_META_DIR"
	chmod -R a+rX "$PGXN_META_DIR"
}

TMP=$(mktemp -d /tmp/pgsentinel-pgxn.XXXXXX)
chmod 755 "$TMP"
trap 'rm -rf "$TMP"' EXIT
pgs_setup_user

VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$PGS_REPO/pgsentinel.control")
pgs_log "PGXN distribution of pgsentinel $VERSION"

# 1 and 2: META.json against the spec.
if ensure_validator; then
	if out=$("$PGXN_META" "$PGS_REPO/META.json" 2>&1); then
		ok "META.json is valid ($out; pgxn_meta $PGXN_META_VERSION)"
	else
		failed "META.json is not valid against the PGXN meta spec:"
		printf '%s\n' "$out"
	fi
	python3 - "$PGS_REPO/META.json" "$TMP" <<'EOF'
import json, sys
meta = json.load(open(sys.argv[1]))
m = dict(meta); del m["maintainer"]
json.dump(m, open(sys.argv[2] + "/no-maintainer.json", "w"))
m = dict(meta); m["license"] = "not-a-licence"
json.dump(m, open(sys.argv[2] + "/bad-licence.json", "w"))
EOF
	if ! "$PGXN_META" "$TMP/no-maintainer.json" >/dev/null 2>&1 &&
		! "$PGXN_META" "$TMP/bad-licence.json" >/dev/null 2>&1; then
		ok "the validator rejects a META.json without maintainer and one with an unknown licence"
	else
		failed "the validator accepted an invalid META.json"
	fi
else
	failed "META.json: no validator (pgxn_meta) could be had"
	failed "the validator rejects invalid META.json files (not run)"
fi

# 3: make dist.
zip=$TMP/pgsentinel-$VERSION.zip
if ! make -s -C "$PGS_REPO" PG_CONFIG="$PG_CONFIG" dist >"$TMP/dist.log" 2>&1; then
	failed "make dist failed:"
	cat "$TMP/dist.log"
	failed "the distribution builds (no distribution)"
	finish
fi
mv "$PGS_REPO/pgsentinel-$VERSION.zip" "$zip"
mapfile -t needed < <(
	cd "$PGS_REPO" &&
		printf '%s\n' Makefile pgsentinel.control META.json LICENSE README.md CHANGELOG.md &&
		make -s --no-print-directory PG_CONFIG="$PG_CONFIG" -f Makefile -f - print-dist-needs <<'EOF'
print-dist-needs:
	@printf '%s\n' $(DATA) $(patsubst %.o,%.c,$(OBJS))
EOF
)
if problems=$(python3 - "$zip" "pgsentinel-$VERSION/" "${needed[@]}" <<'EOF'
import sys, zipfile
zip_path, prefix, needed = sys.argv[1], sys.argv[2], sys.argv[3:]
names = zipfile.ZipFile(zip_path).namelist()
bad = [n for n in names if not n.startswith(prefix)]
if bad:
    print("entries outside %s: %s" % (prefix, bad[:5]))
have = {n[len(prefix):] for n in names}
missing = [n for n in needed if n not in have]
if missing:
    print("missing: %s" % missing)
ci = [n for n in have if n.startswith(".ci/")]
if ci:
    print("has .ci/ files: %s" % ci)
EOF
) && [ -z "$problems" ]; then
	(cd "$TMP" && python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(".")' "$zip")
	if out=$("$PGXN_META" "$TMP/pgsentinel-$VERSION/META.json" 2>&1); then
		ok "make dist: pgsentinel-$VERSION.zip, $(python3 -c 'import sys,zipfile; print(len(zipfile.ZipFile(sys.argv[1]).namelist()))' "$zip") entries under pgsentinel-$VERSION/, its META.json valid, all of ${#needed[@]} needed files"
	else
		failed "the META.json of the distribution is not valid: $out"
	fi
else
	failed "make dist: pgsentinel-$VERSION.zip is wrong: $problems"
fi

# 4: build the unpacked distribution, as a user would.
src=$TMP/pgsentinel-$VERSION
if [ -d "$src" ]; then
	pgs_give_to_user "$src"
	if (cd "$src" && pgs_as_user_in "$src" make -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG") >"$TMP/build.log" 2>&1 &&
		[ -f "$src/pgsentinel.so" ]; then
		ok "the distribution builds with -Werror ($("$PG_CONFIG" --version))"
	else
		failed "the distribution does not build:"
		tail -30 "$TMP/build.log"
	fi
else
	failed "the distribution builds (not unpacked)"
fi
finish
