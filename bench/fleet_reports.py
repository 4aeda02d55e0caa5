#!/usr/bin/env python3
"""A fleet server's reports on a repository of many servers (issue 30).

    python3 bench/fleet_reports.py --pg-bin DIR [--servers 100] [--sessions 50]

DIR as for bench/archive.py; run as root, the cluster as pgsentinel_test in
/tmp.  One throwaway repository (its archiver off: the rolls are timed here):

  1. one day of synthetic rows of one fleet server "s1" (2021-03-01 UTC, a
     sample a second, --sessions active sessions in each: 40 % on CPU, 30 %
     on IO:DataFileRead, 20 % on Lock:transactionid behind the first
     session, 10 % on LWLock:WALWrite; 10 statements), written straight
     into the fleet's tables as a pulled server's rows;
  2. rolled up by pgsentinel_fleet_roll() an hour at a time, as the tick
     does (timed: the repository's CPU per server-day of rollups);
  3. --servers - 1 more servers, each with its own partitions and a copy
     of s1's rollups and samples (not its rows: a report of s1 reads s1's
     rows; the others are there for the planner's partitions);
  4. s1's reports over 24 hours and over one hour, each call run twice and
     the second timed, with the rollups and again with
     pgsentinel_report.rollups = off (rows only); then the overview of
     every server (rollups only) over the same windows.
Prints a Markdown table.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archive  # noqa: E402  (the Cluster of bench/archive.py)

DAY = "2021-03-01"

# one server's day of rows, as a pulled server's (feed 0)
DATA_SQL = """
INSERT INTO pgsentinel_fleet_server (server_id, name, method, conninfo, pulled_until,
                                     retention, minute_retention, hour_retention)
VALUES (1, 's1', 'pull', '', '{day} 23:59:59.9+00', '100 years', '100 years', '100 years');
SELECT pgsentinel_fleet_partitions(1, '{day}', '{day}');
INSERT INTO pgsentinel_fleet_wait_event VALUES
    (1, 0, 1, 'CPU', 'CPU'), (1, 0, 2, 'IO', 'DataFileRead'),
    (1, 0, 3, 'Lock', 'transactionid'), (1, 0, 4, 'LWLock', 'WALWrite');
INSERT INTO pgsentinel_fleet_text
SELECT 1, 0, '{day}', q, q, format('SELECT /* bench statement %s */ * FROM t%s WHERE id = $1', q, q)
FROM generate_series(1, 10) q;
INSERT INTO pgsentinel_fleet_session
    (server_id, feed, day, session_id, hash, datid, datname, pid, usesysid, usename,
     application_name, client_addr, backend_start, backend_type)
SELECT 1, 0, '{day}', s, s, 1, 'bench', 10000 + s, 10, 'app' || (s % 3), 'web' || (s % 4),
       '10.0.0.' || s || '/32', '{day}', 'client backend'
FROM generate_series(1, {n}) s;
-- the wait of session s: CPU, IO, Lock (behind session 1), LWLock
CREATE TEMP TABLE bench_w AS
SELECT s, CASE WHEN s <= {n} * 4 / 10 THEN 1 WHEN s <= {n} * 7 / 10 THEN 2
               WHEN s <= {n} * 9 / 10 THEN 3 ELSE 4 END AS w
FROM generate_series(1, {n}) s;
-- one batch a minute: its 60 samples, the rows by session then sample
INSERT INTO pgsentinel_fleet_batch
    (server_id, feed, first_time, last_time, sample_ids, sample_us, sample_periods,
     weights, active_sessions, sample_blocked, row_samples, session_ids,
     wait_event_ids, states, top_level_query_ids, query_ids, cmdtypes, queryids,
     blockers, blockerpids, blocker_states, blocker_usesysids, blocking_pids)
SELECT 1, 0, t, t + interval '59 s',
       (SELECT array_agg(m * 60 + i ORDER BY i) FROM generate_series(0, 59) i),
       (SELECT array_agg(i * 1000000::int8 ORDER BY i) FROM generate_series(0, 59) i),
       array_fill(1::float8, ARRAY[60]), array_fill(1::float8, ARRAY[60]),
       array_fill({n}, ARRAY[60]), array_fill(true, ARRAY[60]),
       r.row_samples, r.session_ids, r.wait_event_ids, r.states, r.texts, r.texts,
       r.cmdtypes, r.queryids, r.blockers, r.blockerpids, r.blocker_states,
       r.blocker_usesysids, r.blocking_pids
FROM generate_series(0, 1439) m
CROSS JOIN LATERAL (SELECT '{day} 00:00+00'::timestamptz + m * interval '1 min' AS t) x
CROSS JOIN (
  SELECT pgsentinel_pack(array_agg(i ORDER BY w.s, i)) AS row_samples,
         pgsentinel_pack(array_agg(w.s ORDER BY w.s, i)) AS session_ids,
         pgsentinel_pack(array_agg(w.w ORDER BY w.s, i)) AS wait_event_ids,
         array_agg('active'::text ORDER BY w.s, i) AS states,
         pgsentinel_pack(array_agg(1 + w.s % 10 ORDER BY w.s, i)) AS texts,
         array_agg('SELECT'::text ORDER BY w.s, i) AS cmdtypes,
         array_agg(1000 + w.s % 10::int8 ORDER BY w.s, i) AS queryids,
         pgsentinel_pack(array_agg(CASE WHEN w.w = 3 THEN 1 ELSE 0 END ORDER BY w.s, i)) AS blockers,
         pgsentinel_pack(array_agg(CASE WHEN w.w = 3 THEN 10001 END ORDER BY w.s, i)) AS blockerpids,
         array_agg(CASE WHEN w.w = 3 THEN 'active' END ORDER BY w.s, i) AS blocker_states,
         array_agg(CASE WHEN w.w = 3 THEN 10::oid END ORDER BY w.s, i) AS blocker_usesysids,
         array_agg(CASE WHEN w.w = 3 THEN '{{10001}}' END ORDER BY w.s, i) AS blocking_pids
    FROM bench_w w, generate_series(1, 60) i) r;
"""

# server k: its partitions, s1's samples and rollups under its own id
CLONE_SQL = """
INSERT INTO pgsentinel_fleet_server (server_id, name, method, conninfo, pulled_until,
                                     rolled_until, hours_rolled_until, retention,
                                     minute_retention, hour_retention)
SELECT {k}, 's{k}', 'pull', '', pulled_until, rolled_until, hours_rolled_until,
       retention, minute_retention, hour_retention
FROM pgsentinel_fleet_server WHERE server_id = 1;
SELECT pgsentinel_fleet_partitions({k}, '{day}', '{day}');
INSERT INTO pgsentinel_fleet_batch (server_id, feed, first_time, last_time, sample_ids,
       sample_us, sample_periods, weights, active_sessions, sample_blocked)
SELECT {k}, feed, first_time, last_time, sample_ids, sample_us, sample_periods, weights,
       active_sessions, sample_blocked FROM pgsentinel_fleet_batch WHERE server_id = 1;
"""
ROLLUPS = ["minute_batch", "minute_observed", "session_minute_batch", "blocking_minute_batch",
           "hour", "hour_observed", "session_hour", "blocking_hour"]

CALLS = [
    ("pgsentinel_aas", "SELECT count(*) FROM pgsentinel_aas('{a}', '{b}', server => 's1')"),
    ("pgsentinel_top(..., 'statement')",
     "SELECT count(*) FROM pgsentinel_top('{a}', '{b}', 'statement', server => 's1')"),
    ("pgsentinel_aas_series", "SELECT count(*) FROM pgsentinel_aas_series('{a}', '{b}', server => 's1')"),
    ("pgsentinel_blocking_trees",
     "SELECT count(*) FROM pgsentinel_blocking_trees('{a}', '{b}', server => 's1')"),
    ("pgsentinel_report(format => 'html')",
     "SELECT length(pgsentinel_report('{a}', '{b}', format => 'html', server => 's1'))"),
    # every server: the fleet at a glance
    ("pgsentinel_fleet_overview() (every server)",
     "SELECT count(*) FROM pgsentinel_fleet_overview('{a}', '{b}')"),
    ("pgsentinel_fleet_overview_html() (every server)",
     "SELECT length(pgsentinel_fleet_overview_html('{a}', '{b}'))"),
]


def timed(cl, sql, rollups=True):
    setting = "on" if rollups else "off"
    q = f"SET pgsentinel_report.rollups = {setting}; {sql}"
    cl.psql(q)
    t = time.time()
    cl.psql(q)
    return time.time() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg-bin", required=True)
    ap.add_argument("--servers", type=int, default=100)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--rows-too", action="store_true",
                    help="also time each call with rollups off (rows only: minutes a call)")
    ap.add_argument("--explain", action="store_true",
                    help="then print the plans of the overview's statements over 24 h "
                         "(auto_explain, analyzed)")
    args = ap.parse_args()
    cl = archive.Cluster(args.pg_bin, "pgsentinel_archive.enable = off\n")
    try:
        cl.psql("CREATE EXTENSION pgsentinel")
        t = time.time()
        cl.psql(DATA_SQL.format(day=DAY, n=args.sessions))
        cl.psql("VACUUM ANALYZE")
        load_s = time.time() - t
        rows = int(cl.psql("SELECT sum(cardinality(pgsentinel_unpack(row_samples))) FROM pgsentinel_fleet_batch"))
        t = time.time()
        rolls = 0
        while True:
            out = cl.psql("SELECT samples_rolled FROM pgsentinel_fleet_roll('s1')")
            rolls += 1
            if int(out) == 0:
                break
        roll_s = time.time() - t
        rolled = cl.psql("SELECT rolled_until FROM pgsentinel_fleet_status WHERE name = 's1'")
        rollup_bytes = int(cl.psql(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relname ~ '^pgsentinel_fleet_rollup_[a-z_]+_1_'"))
        t = time.time()
        for k in range(2, args.servers + 1):
            sql = CLONE_SQL.format(k=k, day=DAY) + "".join(
                f"INSERT INTO pgsentinel_fleet_rollup_{r} SELECT (x #= hstore('server_id', '{k}')).* "
                f"FROM pgsentinel_fleet_rollup_{r} x WHERE x.server_id = 1;\n" for r in ROLLUPS)
            cl.psql("CREATE EXTENSION IF NOT EXISTS hstore;" + sql)
        clone_s = time.time() - t
        cl.psql("VACUUM ANALYZE")
        parts = int(cl.psql("SELECT count(*) FROM pg_class WHERE relname LIKE 'pgsentinel\\_fleet\\_%' "
                            "AND relkind IN ('r', 'p')"))
        windows = [("24 h", f"{DAY} 00:00+00", f"{DAY} 23:59:59+00"),
                   ("1 h", f"{DAY} 10:00+00", f"{DAY} 11:00+00")]
        print(f"one server-day: {rows:,} rows ({args.sessions} sessions), loaded in {load_s:.1f} s; "
              f"rolled up in {rolls} calls, {roll_s:.1f} s (rolled_until {rolled}); "
              f"rollups of the day {rollup_bytes / 1e6:.2f} MB")
        print(f"{args.servers} servers ({clone_s:.1f} s to add the others), "
              f"{parts:,} fleet tables and partitions\n")
        head = "| call (server => 's1') | " + " | ".join(
            f"{w} rollups" + (f" | {w} rows only" if args.rows_too else "") for w, _, _ in windows) + " |"
        print(head)
        print("|---" * (1 + len(windows) * (2 if args.rows_too else 1)) + "|")
        for name, sql in CALLS:
            cells = []
            for _, a, b in windows:
                cells.append(f"{timed(cl, sql.format(a=a, b=b)):.2f} s")
                if args.rows_too:
                    cells.append(f"{timed(cl, sql.format(a=a, b=b), rollups=False):.2f} s")
            print(f"| `{name}` | " + " | ".join(cells) + " |")
        if args.explain:
            _, a, b = windows[0]
            sql = ("LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; "
                   "SET auto_explain.log_analyze = on; SET auto_explain.log_nested_statements = on; "
                   "SET auto_explain.log_level = notice; "
                   f"SELECT count(*) FROM pgsentinel_fleet_overview('{a}', '{b}')")
            out = archive.run(archive.as_user(
                [os.path.join(cl.bindir, "psql"), "-XAtq", "-h", cl.dir, "-p", str(cl.port),
                 "-U", "postgres", "-d", "postgres", "-c", sql]))
            print("\n" + out.stderr)
    finally:
        cl.stop()


if __name__ == "__main__":
    main()
