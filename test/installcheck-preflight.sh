#!/bin/sh
# test/installcheck-preflight.sh -- run by `make installcheck` before the
# pg_regress and isolation tests when they run against a running server
# (PGXS's default: PGHOST, PGPORT, PGUSER...), not in throwaway servers
# (PGS_TEMP_INSTANCE=1).
#
#   test/installcheck-preflight.sh PSQL CONF
#
# The tests need that server to run with the settings of CONF
# (test/pgsentinel.conf): pgsentinel and pg_stat_statements preloaded, 10 ms
# sampling, the statements worker in the tests' database...  Without them
# they would fail with diffs that do not say why, so this checks each
# setting of CONF on the server and, if one differs, stops with the list and
# what to do.  It also checks that this pgsentinel is installed there.
# Exit status 0 when the server is ready for the tests.

PSQL=$1
CONF=$2

case $CONF in
/*) ;;
*) CONF=$(cd "$(dirname "$CONF")" && pwd)/$(basename "$CONF") ;;
esac
where="the server at ${PGHOST:-the default socket}, port ${PGPORT:-default}"

say_how() {
	cat >&2 <<EOF
HINT:  make installcheck runs the tests against the running server given by
       PGHOST, PGPORT and PGUSER (a superuser: the tests create databases,
       roles and run ALTER SYSTEM, then reset what they set).  Give that
       server the test settings: add to its postgresql.conf the line
           include '$CONF'
       then restart it, and install this build there (make install).
       Or run the tests in throwaway servers of their own instead:
           make installcheck PGS_TEMP_INSTANCE=1
       (scripts/test-all.sh does that).  See docs/testing.md.
EOF
}

if ! out=$("$PSQL" -X -A -t -q -d postgres -c 'SELECT 1' 2>&1); then
	echo "ERROR: make installcheck: cannot connect to $where:" >&2
	printf '%s\n' "$out" | sed 's/^/       /' >&2
	say_how
	exit 1
fi

# The expected output has the tests' own sessions with no client address.
if [ "$("$PSQL" -X -A -t -q -d postgres -c 'SELECT inet_client_addr() IS NULL')" != t ]; then
	echo "ERROR: make installcheck: $where is reached over TCP" >&2
	echo "DETAIL:  The tests expect their sessions to connect through a Unix socket." >&2
	echo "HINT:  Set PGHOST to the server's socket directory (unix_socket_directories)." >&2
	exit 1
fi

# One row per setting of CONF: name|wanted|running|ok.  Lists (as
# shared_preload_libraries) must contain every wanted item, counts
# (max_connections, max_prepared_transactions) at least the wanted value,
# compute_query_id "auto" is met by "on"; anything else is compared as text.
sql="WITH wanted(name, value) AS (VALUES ('shared_preload_libraries', 'pgsentinel')"
while IFS= read -r line; do
	case $line in
	'#'* | '') continue ;;
	esac
	name=$(printf '%s' "$line" | sed -E 's/^[[:space:]]*([A-Za-z0-9_.]+)[[:space:]]*=.*/\1/')
	value=$(printf '%s' "$line" | sed -E "s/^[^=]*=[[:space:]]*//; s/[[:space:]]*(#.*)?\$//; s/^'(.*)'\$/\\1/")
	value=$(printf '%s' "$value" | sed "s/'/''/g")
	sql="$sql, ('$name', '$value')"
done <"$CONF"
sql="$sql)
SELECT w.name, w.value, coalesce(current_setting(w.name, true), '(not set: library not loaded)'),
       CASE
       WHEN w.name = 'shared_preload_libraries' THEN
           NOT EXISTS (SELECT FROM unnest(string_to_array(w.value, ',')) AS want(lib)
                       WHERE btrim(want.lib) NOT IN
                             (SELECT regexp_replace(btrim(l.lib, ' \"'), '^.*/|\\.so\$', '', 'g')
                              FROM unnest(string_to_array(current_setting(w.name), ',')) AS l(lib)))
       WHEN w.name IN ('max_connections', 'max_prepared_transactions') THEN
           current_setting(w.name)::int >= w.value::int
       WHEN w.name = 'compute_query_id' AND w.value = 'auto' THEN
           current_setting(w.name) IN ('auto', 'on')
       ELSE coalesce(current_setting(w.name, true) = w.value, false)
       END
FROM wanted AS w"
if ! rows=$("$PSQL" -X -A -t -q -F '|' -d postgres -c "$sql" 2>&1); then
	echo "ERROR: make installcheck: could not read the settings of $where:" >&2
	printf '%s\n' "$rows" | sed 's/^/       /' >&2
	exit 1
fi

bad=
preload_missing=
while IFS='|' read -r name want have okay; do
	[ "$okay" = t ] && continue
	if [ "$name" = shared_preload_libraries ] && [ "$want" = pgsentinel ]; then
		preload_missing=1
		continue
	fi
	bad="$bad
         $name = '$have', the tests need '$want'"
done <<EOF
$rows
EOF

if [ -n "$preload_missing" ]; then
	have=$("$PSQL" -X -A -t -q -d postgres -c 'SHOW shared_preload_libraries')
	echo "ERROR: make installcheck: pgsentinel is not loaded by $where" >&2
	echo "DETAIL:  shared_preload_libraries is '$have': the library must be preloaded" >&2
	echo "         there for its sampler to run and its views to work.$bad" >&2
	say_how
	exit 1
fi
if [ -n "$bad" ]; then
	echo "ERROR: make installcheck: $where does not have the settings the tests need" >&2
	echo "DETAIL:  (from $CONF):$bad" >&2
	say_how
	exit 1
fi

# The installed version.  Not with Debian's extension_destdir (set by
# pg_virtualenv -p when a package's tests run against its build tree):
# pg_available_extensions does not list the files found there.
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$(dirname "$CONF")/../pgsentinel.control")
avail=$("$PSQL" -X -A -t -q -d postgres -c \
	"SELECT CASE WHEN coalesce(current_setting('extension_destdir', true), '') <> '' THEN '$version'
	        ELSE (SELECT default_version FROM pg_catalog.pg_available_extensions WHERE name = 'pgsentinel') END")
if [ "$avail" != "$version" ]; then
	echo "ERROR: make installcheck: pgsentinel $version is not installed for $where" >&2
	echo "DETAIL:  pg_available_extensions has '${avail:-no pgsentinel}'." >&2
	echo "HINT:  Run make install with the pg_config of that server (PG_CONFIG=...), then restart it." >&2
	exit 1
fi
echo "installcheck: $where preloads pgsentinel with the test settings"
