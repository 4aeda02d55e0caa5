#!/usr/bin/env python3
"""Every statement's calls: the statements history against pg_stat_statements.

    python3 bench/statement_calls.py --pg-bin DIR [--window 120] [--entries 5000]

DIR is the bin directory of a PostgreSQL 15 with pgsentinel installed (as for
bench/archive.py; run as root, the cluster runs as pgsentinel_test in
/tmp/pgsarch.*, removed at the end).

1. Accuracy: one sample a second, sweeps every 30 s (the defaults), pgbench
   read-write -c 2 at 100 transactions a second (scale 5) and, beside it, a
   statement of microseconds at 100 calls a second that samples rarely see.
   pg_stat_statements is read at both ends of a window of --window seconds
   (the truth); once the readings after its end are in, each statement's
   calls and execution time over the window from pgsentinel_top_calls() are
   compared with it.
2. Cost of a sweep: --entries statements in pg_stat_statements (SQL
   functions called once each), no session active, a sweep every second and
   no other reading: the statements worker's CPU per reading (utime + stime
   from /proc) and the rows a sweep keeps once nothing changes (the first
   sweep keeps every statement).
Prints Markdown tables (bench/REPORT.md, section 5b).
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from archive import Cluster, as_user, cpu_ticks  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def pgbench(cl, args):
    return subprocess.Popen(as_user([os.path.join(cl.bindir, "pgbench"), "-h", cl.dir,
                                     "-p", str(cl.port), "-U", "postgres"] + args + ["postgres"]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def snapshot(cl, name):
    cl.psql(f"CREATE TABLE {name} AS SELECT now() AS t, queryid, sum(calls) AS calls, "
            "sum(total_exec_time) AS ms FROM pg_stat_statements WHERE toplevel GROUP BY queryid")


def accuracy(args):
    cl = Cluster(args.pg_bin, "pgsentinel_ash.sampling_period = 1\n")
    try:
        cl.psql("CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pgsentinel")
        cl.wait("SELECT pgssh_state = 'ok' FROM pgsentinel_status()")
        subprocess.run(as_user([os.path.join(cl.bindir, "pgbench"), "-h", cl.dir, "-p",
                                str(cl.port), "-U", "postgres", "-i", "-s", "5", "postgres"]),
                       check=True, capture_output=True)
        fast = os.path.join(cl.dir, "fast.sql")
        with open(fast, "w") as f:
            f.write("SELECT bbalance FROM pgbench_branches WHERE bid = 1;\n")
        os.chmod(fast, 0o644)
        sweep = int(cl.psql("SELECT setting FROM pg_settings "
                            "WHERE name = 'pgsentinel_pgssh.sweep_interval'"))
        secs = 30 + args.window + sweep + 10
        rw = pgbench(cl, ["-c", "2", "-R", "100", "-T", str(secs)])
        fs = pgbench(cl, ["-c", "1", "-R", "100", "-T", str(secs), "-f", fast])
        time.sleep(30)
        snapshot(cl, "truth0")
        time.sleep(args.window)
        snapshot(cl, "truth1")
        # the readings after the window's end: one sweep later at most
        t1 = cl.psql("SELECT max(t) FROM truth1")
        cl.wait(f"SELECT max(ash_time) > '{t1}'::timestamptz + interval '{sweep + 2} s' "
                "FROM pg_stat_statements_history", timeout=sweep + 60)
        rows = cl.psql("""
            WITH w AS (SELECT (SELECT max(t) FROM truth0) AS t0, (SELECT max(t) FROM truth1) AS t1),
            truth AS (SELECT b.queryid, b.calls - coalesce(a.calls, 0) AS calls,
                             b.ms - coalesce(a.ms, 0) AS ms
                        FROM truth1 b LEFT JOIN truth0 a USING (queryid))
            SELECT o.queryid,
                   round(o.calls_per_s * extract(epoch FROM w.t1 - w.t0)) AS ours,
                   t.calls,
                   round((100 * (o.calls_per_s * extract(epoch FROM w.t1 - w.t0)
                          / nullif(t.calls, 0) - 1))::numeric, 2),
                   round((o.exec_s * 1000)::numeric, 1), round(t.ms::numeric, 1),
                   round((100 * (o.exec_s * 1000 / nullif(t.ms, 0) - 1))::numeric, 2),
                   (SELECT count(*) FROM pg_active_session_history h WHERE h.queryid = o.queryid),
                   replace(left(regexp_replace(o.query, '\\s+', ' ', 'g'), 40), '|', '/')
              FROM w, pgsentinel_top_calls(w.t0, w.t1, 50, 'calls') o
              JOIN truth t ON t.queryid = o.queryid
             WHERE t.calls >= 100
             ORDER BY t.calls DESC, o.queryid""")
        rw.wait()
        fs.wait()
        return rows.splitlines()
    finally:
        cl.stop()


def sweep_cost(args):
    cl = Cluster(args.pg_bin, "pgsentinel_ash.sampling_period = 1\n"
                              "pgsentinel_pgssh.sweep_interval = 1\n"
                              f"pg_stat_statements.max = {max(args.entries + 100, 1000)}\n")
    try:
        cl.psql("CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pgsentinel")
        cl.psql(f"DO $$BEGIN FOR i IN 1..{args.entries} LOOP EXECUTE format("
                "'CREATE FUNCTION bench_f%s() RETURNS int LANGUAGE sql AS ''SELECT %s''', i, i);"
                " END LOOP; END$$")
        cl.psql("SELECT pg_stat_statements_reset()")
        subprocess.run(as_user([os.path.join(cl.bindir, "psql"), "-XAtq", "-h", cl.dir, "-p",
                                str(cl.port), "-U", "postgres", "-c",
                                "".join(f"SELECT bench_f{i}();" for i in range(1, args.entries + 1))]),
                       check=True, capture_output=True)
        entries = int(cl.psql("SELECT count(*) FROM pg_stat_statements"))
        cl.wait("SELECT pgssh_state = 'ok' FROM pgsentinel_status()")
        # the first sweep keeps every statement; then nothing changes
        cl.wait(f"SELECT count(*) >= {entries - 50} FROM pg_stat_statements_history")
        time.sleep(3)
        pid = int(cl.psql("SELECT pgssh_worker_pid FROM pgsentinel_status()"))
        r0 = int(cl.psql("SELECT pgssh_samples FROM pgsentinel_status()"))
        n0 = int(cl.psql("SELECT count(*) FROM pg_stat_statements_history"))
        c0 = cpu_ticks(pid)
        time.sleep(args.cost_seconds)
        c1 = cpu_ticks(pid)
        r1 = int(cl.psql("SELECT pgssh_samples FROM pgsentinel_status()"))
        n1 = int(cl.psql("SELECT count(*) FROM pg_stat_statements_history"))
        last_us = int(cl.psql("SELECT pgssh_last_us FROM pgsentinel_status()"))
        readings = max(r1 - r0, 1)
        return dict(entries=entries, readings=r1 - r0, seconds=args.cost_seconds,
                    us_per_reading=(c1 - c0) / TICK * 1e6 / readings,
                    cpu_pct=(c1 - c0) / TICK / args.cost_seconds * 100,
                    rows_per_sweep=(n1 - n0) / readings, last_us=last_us)
    finally:
        cl.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg-bin", required=True)
    ap.add_argument("--window", type=int, default=120)
    ap.add_argument("--entries", type=int, default=5000)
    ap.add_argument("--cost-seconds", type=int, default=20)
    args = ap.parse_args()
    rows = accuracy(args)
    print(f"Accuracy over a {args.window} s window (pgbench read-write -R 100 -c 2, and a "
          "statement of microseconds at 100 calls/s):")
    print()
    print("| queryid | calls, pgsentinel_top_calls | calls, pg_stat_statements | error | "
          "exec ms, ours | exec ms, pg_stat_statements | error | ASH rows of it | statement |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = r.split("|")
        print("| " + " | ".join(f[:3]) + f" | {f[3]} % | {f[4]} | {f[5]} | {f[6]} % | "
              + " | ".join(f[7:]) + " |")
    c = sweep_cost(args)
    print()
    print("| pg_stat_statements entries | sweeps (1 s apart) | statements worker µs CPU "
          "per sweep | its CPU % of one core | rows kept per sweep, nothing changing | "
          "wall µs of the last sweep |")
    print("|---|---|---|---|---|---|")
    print(f"| {c['entries']} | {c['readings']} in {c['seconds']} s | {c['us_per_reading']:.0f} | "
          f"{c['cpu_pct']:.2f} | {c['rows_per_sweep']:.2f} | {c['last_us']} |")


if __name__ == "__main__":
    main()
