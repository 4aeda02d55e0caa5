#!/usr/bin/env python3
"""The archive's costs, measured on a throwaway cluster.

    python3 bench/archive.py --pg-bin DIR [--sessions 50] [--samples 600]
                             [--pg-ash ASH_INSTALL_SQL] [--pg-ash-samples 300]
                             [--pgbench]
    python3 bench/archive.py --pg-bin DIR --pg-ash ASH_INSTALL_SQL --busy
                             [--seconds 300] [--warmup 60]
                             [--workloads rw,ro,sleepers] [--json FILE]

DIR is the bin directory of a PostgreSQL 15 with pgsentinel installed (e.g.
the private copy scripts/test-all.sh --private-install makes). Run as root:
the cluster runs as the unprivileged user pgsentinel_test, Unix socket only,
in /tmp/pgsarch.*, removed at the end.

Measures, with N sessions sleeping (all active at every sample):
  1. bytes on disk per archived session-sample, indexes included, and WAL per
     archived sample: sampling every 0.1 s, keep_one_in = 1, over --samples
     samples, as the difference between two points after the archive caught
     up (the partitions' fixed pages do not count);
  2. the archiver's CPU (utime + stime from /proc) at 1 s sampling and
     keep_one_in = 1, over --cpu-seconds, in % of one core, next to the
     sampler's own;
  3. query times over synthetic archive data: average active sessions by
     minute over 24 hours from the raw samples (N sessions, every second),
     and from the per-hour rollups over a year.
  4. with --pg-ash (pg_ash's sql/ash-install.sql), the same on pg_ash in the
     same run: a cluster of its own with N sleeping sessions, ash.take_sample()
     called once a second --pg-ash-samples times after a warm-up; bytes on disk
     of its tables (indexes included) per session-sample, WAL per sample, and
     the time of one take_sample() as psql's \\timing reports it.
  5. with --pgbench, 1. again under pgbench -S -c 20 (scale 5) instead of the
     sleepers: statements that change at every sample.
Prints a Markdown table (paste into bench/REPORT.md).

With --busy (issue 32, "the archive of a busy server"), instead: for each
workload -- pgbench read-write -c 20 -j 2 (scale 10), pgbench -S -c 20 -j 2,
50 sessions in pg_sleep() -- pgsentinel and then pg_ash, each on a fresh
cluster (autovacuum on, checkpoint_timeout 1 h so that no checkpoint falls in
the window; whether one did is reported), at one sample a second, every sample
kept:
  - pgsentinel: sampling_period 1, keep_one_in 1, archive interval
    --archive-interval (default 1 min, the server default), with
    pg_stat_statements created (so its statements history is archived too);
  - pg_ash: psql calls ash.take_sample() at each whole second and
    ash.rollup_minute() at each whole minute, as its pg_cron jobs would.
After --warmup seconds (pgsentinel: and the archive caught up; the window then
put within one UTC hour, so that it holds no hour rollup, written once an
hour), over a window of --seconds (pgsentinel: ended once the archive caught
up again):
  - session rows per sample; disk per session-row, per sample and per day
    (every relation of the system: tables, partitions, indexes, TOAST,
    sequences, rollups included; difference of the main forks' sizes between
    the two ends: the free-space and visibility maps, a few pages a relation
    whatever it holds, are reported apart, as a window of minutes would count
    a new partition's maps as every sample's);
  - the system's WAL per sample and per day, separated from the workload's
    with pg_waldump: the records of every transaction that wrote one of the
    system's relations (by relfilenode), subtransactions and commit records
    included, and the records without a transaction id that touched one;
  - where the bytes go: disk per table, index and TOAST (a partitioned table
    summed over its partitions), WAL by resource manager and by table;
  - CPU in % of a core (utime + stime from /proc): pgsentinel's archiver,
    sampler and statements worker; pg_ash's take_sample() backend;
  - pgsentinel: the floor of the window's rows (bench/archive_floor.py): an
    estimate of the least bytes their columns take, kept exactly.
The Markdown is written by bench/archive_report.py (which also rewrites it
from a --json file).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import archive_floor
import archive_report

USER = "pgsentinel_test"


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def as_user(cmd):
    return ["runuser", "-u", USER, "--"] + cmd


class Cluster:
    def __init__(self, bindir, conf, preload="pg_stat_statements,pgsentinel"):
        self.bindir = bindir
        self.dir = tempfile.mkdtemp(prefix="pgsarch.", dir="/tmp")
        os.chmod(self.dir, 0o755)
        shutil.chown(self.dir, USER)
        self.data = os.path.join(self.dir, "data")
        self.port = 55500 + os.getpid() % 400
        run(as_user([os.path.join(bindir, "initdb"), "-D", self.data, "-A", "trust",
                     "-U", "postgres"]))
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(f"port = {self.port}\nlisten_addresses = ''\n"
                    f"unix_socket_directories = '{self.dir}'\n"
                    f"shared_preload_libraries = '{preload}'\n"
                    "max_connections = 200\nmax_worker_processes = 16\n"
                    "checkpoint_timeout = '1h'\nmax_wal_size = '10GB'\n"
                    "autovacuum = off\n" + conf)
        run(as_user([os.path.join(bindir, "pg_ctl"), "-D", self.data, "-l",
                     os.path.join(self.dir, "log"), "-w", "start"]))
        self.sleepers = []

    def psql(self, sql, db="postgres"):
        return run(as_user([os.path.join(self.bindir, "psql"), "-XAtq", "-h", self.dir,
                            "-p", str(self.port), "-U", "postgres", "-d", db,
                            "-v", "ON_ERROR_STOP=1", "-c", sql])).stdout.strip()

    def sleep_sessions(self, n):
        for _ in range(n):
            self.sleepers.append(subprocess.Popen(as_user(
                [os.path.join(self.bindir, "psql"), "-XAtq", "-h", self.dir, "-p",
                 str(self.port), "-U", "postgres", "-c", "SELECT pg_sleep(86400)"]),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.wait(f"SELECT count(*) >= {n} FROM pg_stat_activity "
                  "WHERE wait_event = 'PgSleep'")

    def wait(self, cond, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            if self.psql(f"SELECT ({cond})") == "t":
                return
            time.sleep(0.1)
        raise SystemExit(f"not true within {timeout} s: {cond}")

    def stop(self):
        for p in self.sleepers:
            p.kill()
        subprocess.run(as_user([os.path.join(self.bindir, "pg_ctl"), "-D", self.data,
                                "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


SIZE_SQL = """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)
  FROM pg_class c WHERE c.relkind = 'r'
   AND (c.relname LIKE 'pgsentinel\\_archive\\_%' OR c.relname LIKE 'pgsentinel\\_rollup\\_%')"""


def caught_up(cl):
    newest = cl.psql("SELECT max(sample_id) FROM pgsentinel_samples()")
    cl.wait(f"SELECT last_sample_id >= {newest} FROM pgsentinel_archive_state")


def size_and_wal(args, pgbench=False):
    cl = Cluster(args.pg_bin, "pgsentinel_ash.sampling_period = 0.1\n"
                 "pgsentinel_archive.keep_one_in = 1\npgsentinel_archive.interval = '5s'\n")
    bench = None
    try:
        cl.psql("CREATE EXTENSION pgsentinel")
        if pgbench:
            # statements that change at every sample: an activity row each;
            # select-only, so that the cluster's WAL is the archive's
            run(as_user([os.path.join(cl.bindir, "pgbench"), "-i", "-q", "-s", "5",
                         "-h", cl.dir, "-p", str(cl.port), "-U", "postgres", "postgres"]))
            bench = subprocess.Popen(as_user(
                [os.path.join(cl.bindir, "pgbench"), "-n", "-S", "-c", "20", "-T", "3600",
                 "-h", cl.dir, "-p", str(cl.port), "-U", "postgres", "postgres"]),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            cl.sleep_sessions(args.sessions)
        cl.wait("(SELECT archive_state FROM pgsentinel_status()) = 'ok'")
        time.sleep(3)
        caught_up(cl)
        cl.psql("CHECKPOINT")
        s0 = cl.psql("SELECT samples_archived || ' ' || rows_archived || ' ' || "
                     "pg_current_wal_insert_lsn() FROM pgsentinel_archive_state").split()
        b0 = int(cl.psql(SIZE_SQL))
        start_id = int(cl.psql("SELECT max(sample_id) FROM pgsentinel_samples()"))
        cl.wait(f"(SELECT max(sample_id) FROM pgsentinel_samples()) >= {start_id + args.samples}",
                timeout=args.samples)
        caught_up(cl)
        s1 = cl.psql("SELECT samples_archived || ' ' || rows_archived || ' ' || "
                     "pg_current_wal_insert_lsn() FROM pgsentinel_archive_state").split()
        b1 = int(cl.psql(SIZE_SQL))
        wal = int(cl.psql(f"SELECT pg_wal_lsn_diff('{s1[2]}', '{s0[2]}')"))
        samples = int(s1[0]) - int(s0[0])
        rows = int(s1[1]) - int(s0[1])
        return {"samples": samples, "rows": rows, "bytes": b1 - b0, "wal": wal,
                "bytes_per_row": (b1 - b0) / rows, "wal_per_sample": wal / samples,
                "rows_per_sample": rows / samples}
    finally:
        if bench:
            bench.kill()
        cl.stop()


def cpu(args):
    cl = Cluster(args.pg_bin, "pgsentinel_ash.sampling_period = 1\n"
                 "pgsentinel_archive.keep_one_in = 1\npgsentinel_archive.interval = '5s'\n")
    try:
        cl.psql("CREATE EXTENSION pgsentinel")
        cl.sleep_sessions(args.sessions)
        cl.wait("(SELECT archive_state FROM pgsentinel_status()) = 'ok'")
        caught_up(cl)
        apid = int(cl.psql("SELECT archive_worker_pid FROM pgsentinel_status()"))
        spid = int(cl.psql("SELECT worker_pid FROM pgsentinel_status()"))
        a0, s0, t0 = cpu_ticks(apid), cpu_ticks(spid), time.time()
        time.sleep(args.cpu_seconds)
        a1, s1, t1 = cpu_ticks(apid), cpu_ticks(spid), time.time()
        hz = os.sysconf("SC_CLK_TCK")
        rows = cl.psql("SELECT rows_archived FROM pgsentinel_archive_state")
        return {"archiver_pct": 100.0 * (a1 - a0) / hz / (t1 - t0),
                "sampler_pct": 100.0 * (s1 - s0) / hz / (t1 - t0),
                "seconds": t1 - t0, "rows": rows,
                "last_us": cl.psql("SELECT archive_last_us FROM pgsentinel_status()")}
    finally:
        cl.stop()


SYNTH_SQL = """
SET search_path = public;
-- a day of samples, every second, {n} sessions each (yesterday, UTC), in
-- batches of a minute; all rows of one session of the day
SELECT format('CREATE TABLE %I PARTITION OF pgsentinel_archive_batch FOR VALUES FROM (%L) TO (%L)',
              'pgsentinel_archive_batch_' || to_char(d, 'YYYYMMDD'),
              timezone('UTC', d::timestamp), timezone('UTC', d::timestamp + interval '1 day'))
FROM (SELECT timezone('UTC', now())::date - 1 AS d) x \\gexec
SELECT format('CREATE TABLE %I PARTITION OF pgsentinel_archive_session FOR VALUES FROM (%L) TO (%L)',
              'pgsentinel_archive_session_' || to_char(d, 'YYYYMMDD'), d, d + 1)
FROM (SELECT timezone('UTC', now())::date - 1 AS d) x \\gexec
INSERT INTO pgsentinel_archive_session (day, session_id, hash, pid, backend_type)
VALUES (timezone('UTC', now())::date - 1, 1, 1, 1, 'client backend');
INSERT INTO pgsentinel_archive_batch (first_time, last_time, sample_ids, sample_us,
       sample_periods, weights, active_sessions, sample_blocked, row_samples,
       session_ids, wait_event_ids, states)
SELECT t, t + interval '59 s',
       (SELECT array_agg(m * 60 + i ORDER BY i) FROM generate_series(0, 59) i),
       (SELECT array_agg(i * 1000000::int8 ORDER BY i) FROM generate_series(0, 59) i),
       array_fill(1::float8, ARRAY[60]), array_fill(1::float8, ARRAY[60]),
       array_fill({n}, ARRAY[60]), array_fill(false, ARRAY[60]),
       (SELECT pgsentinel_pack(array_agg(i ORDER BY i, k))
          FROM generate_series(1, 60) i, generate_series(1, {n}) k),
       pgsentinel_pack(array_fill(1, ARRAY[60 * {n}])),
       (SELECT pgsentinel_pack(array_agg((m * 60 + i - 1) % 3 + 1 ORDER BY i, k))
          FROM generate_series(1, 60) i, generate_series(1, {n}) k),
       array_fill('active'::text, ARRAY[60 * {n}])
FROM generate_series(0, 1439) m,
     LATERAL (SELECT timezone('UTC', (timezone('UTC', now())::date - 1)::timestamp)
                     + m * interval '1 min' AS t) x;
-- a day of minute rollups, 200 combinations (wait event x statement) a minute
SELECT format('CREATE TABLE %I PARTITION OF pgsentinel_rollup_minute_batch FOR VALUES FROM (%L) TO (%L)',
              'pgsentinel_rollup_minute_batch_' || to_char(d, 'YYYYMMDD'),
              timezone('UTC', d::timestamp), timezone('UTC', d::timestamp + interval '1 day'))
FROM (SELECT timezone('UTC', now())::date - 1 AS d) x \\gexec
INSERT INTO pgsentinel_rollup_minute_batch (bucket, row_data)
SELECT timezone('UTC', (timezone('UTC', now())::date - 1)::timestamp) + m * interval '1 min',
       pgsentinel_minute_pack(
       array_fill(NULL::text, ARRAY[200]), array_fill(NULL::oid, ARRAY[200]),
       array_fill(NULL::text, ARRAY[200]), array_fill(NULL::text, ARRAY[200]),
       array_fill(NULL::text, ARRAY[200]), array_fill('IO'::text, ARRAY[200]),
       (SELECT array_agg('Event' || w ORDER BY w, q) FROM generate_series(1, 20) w, generate_series(1, 10) q),
       (SELECT array_agg(q::int8 ORDER BY w, q) FROM generate_series(1, 20) w, generate_series(1, 10) q),
       array_fill(60.0 * {n} / 200, ARRAY[200]), array_fill(60::int8, ARRAY[200]))
FROM generate_series(0, 1439) m;
-- a year of hourly rollups, 200 combinations (wait event x statement) an hour
INSERT INTO pgsentinel_rollup_hour_observed
SELECT h, 3600, 3600 FROM generate_series(date_trunc('hour', now()) - interval '365 days',
                                          date_trunc('hour', now()), interval '1 hour') h
ON CONFLICT DO NOTHING;
"""


def queries(args):
    cl = Cluster(args.pg_bin, "pgsentinel_archive.enable = off\n")
    try:
        cl.psql("CREATE EXTENSION pgsentinel")
        # hour rollup partitions for a year, then rows
        cl.psql("""DO $$ DECLARE m date; BEGIN
          FOR m IN SELECT generate_series(date_trunc('month', now() - interval '366 days'),
                                          date_trunc('month', now()), interval '1 month')::date LOOP
            EXECUTE format('CREATE TABLE %I PARTITION OF pgsentinel_rollup_hour FOR VALUES FROM (%L) TO (%L)',
                           'pgsentinel_rollup_hour_' || to_char(m, 'YYYYMM'),
                           timezone('UTC', m::timestamp), timezone('UTC', (m + interval '1 month')::timestamp));
            EXECUTE format('CREATE TABLE %I PARTITION OF pgsentinel_rollup_hour_observed FOR VALUES FROM (%L) TO (%L)',
                           'pgsentinel_rollup_hour_observed_' || to_char(m, 'YYYYMM'),
                           timezone('UTC', m::timestamp), timezone('UTC', (m + interval '1 month')::timestamp));
          END LOOP; END $$""")
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False, dir=cl.dir) as f:
            f.write(SYNTH_SQL.format(n=args.sessions))
            f.write("""INSERT INTO pgsentinel_rollup_hour (bucket, wait_event_type, wait_event,
                       queryid, db_time, rows)
                SELECT h, 'IO', 'Event' || w, q, 3600.0 / 200, 1
                FROM generate_series(date_trunc('hour', now()) - interval '365 days',
                                     date_trunc('hour', now()), interval '1 hour') h,
                     generate_series(1, 20) w, generate_series(1, 10) q;
                VACUUM ANALYZE;\n""")
            path = f.name
        os.chmod(path, 0o644)
        run(as_user([os.path.join(cl.bindir, "psql"), "-XAtq", "-h", cl.dir, "-p",
                     str(cl.port), "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-f", path]))
        res = {}
        for name, sql in [
            ("aas_by_minute_24h_raw",
             "SELECT date_trunc('minute', sample_time), sum(active_sessions * weight) / 60"
             " FROM pgsentinel_sample_archive WHERE sample_time > now() - interval '2 days'"
             " GROUP BY 1 ORDER BY 1"),
            ("aas_by_minute_and_wait_24h_raw",
             "SELECT date_trunc('minute', ash_time), wait_event, sum(weight) / 60"
             " FROM pgsentinel_archive_rows_by_batch WHERE ash_time > now() - interval '2 days'"
             " AND batch_start > date_trunc('day', now() - interval '2 days', 'UTC')"
             " GROUP BY 1, 2"),
            ("aas_by_minute_and_wait_24h_rollup",
             "SELECT bucket, wait_event, sum(db_time) / 60 FROM pgsentinel_rollup_minute"
             " WHERE bucket > now() - interval '2 days' GROUP BY 1, 2"),
            ("aas_by_hour_and_wait_1y_rollup",
             "SELECT bucket, wait_event, sum(db_time) / 3600 FROM pgsentinel_rollup_hour"
             " WHERE bucket > now() - interval '366 days' GROUP BY 1, 2"),
        ]:
            times = []
            for _ in range(3):
                out = cl.psql("EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) " + sql)
                ms = [l for l in out.splitlines() if "Execution Time" in l][0]
                times.append(float(ms.split(":")[1].split()[0]))
            res[name] = min(times)
        return res
    finally:
        cl.stop()


ASH_SIZE_SQL = """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'ash' AND c.relkind IN ('r', 'm')"""


def install_pg_ash(cl, install_sql):
    """pg_ash (its ash-install.sql) in cluster cl, sampling once a second."""
    script = os.path.join(cl.dir, "ash-install.sql")
    shutil.copy(install_sql, script)
    os.chmod(script, 0o644)
    cl.psql("CREATE EXTENSION pg_stat_statements")
    run(as_user([os.path.join(cl.bindir, "psql"), "-XAtq", "-h", cl.dir, "-p",
                 str(cl.port), "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-f", script]))
    cl.psql("SELECT ash.start('1 second')")


def pg_ash_side(args):
    """pg_ash's costs under the same load, on a cluster of its own."""
    cl = Cluster(args.pg_bin, "pgsentinel_archive.enable = off\n")
    try:
        install_pg_ash(cl, args.pg_ash)
        cl.sleep_sessions(args.sessions)
        for _ in range(3):              # partitions and maps made by the first calls
            cl.psql("SELECT ash.take_sample()")
            time.sleep(1)
        cl.psql("CHECKPOINT")
        b0 = int(cl.psql(ASH_SIZE_SQL))
        l0 = cl.psql("SELECT pg_current_wal_insert_lsn()")
        calls = "\\timing on\n" + "SELECT ash.take_sample();\nSELECT pg_sleep(1);\n" * args.pg_ash_samples
        path = os.path.join(cl.dir, "calls.sql")
        with open(path, "w") as f:
            f.write(calls)
        os.chmod(path, 0o644)
        out = run(as_user([os.path.join(cl.bindir, "psql"), "-Xq", "-h", cl.dir, "-p",
                           str(cl.port), "-U", "postgres", "-f", path])).stdout
        wal = int(cl.psql(f"SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '{l0}')"))
        b1 = int(cl.psql(ASH_SIZE_SQL))
        times = [float(l.split()[1]) for l in out.splitlines() if l.startswith("Time:")]
        take = sorted(times[0::2])      # the take_sample() calls, not the sleeps
        n = args.pg_ash_samples
        return {"samples": n, "bytes": b1 - b0, "wal": wal,
                "bytes_per_row": (b1 - b0) / (n * args.sessions),
                "wal_per_sample": wal / n, "take_ms_median": take[len(take) // 2]}
    finally:
        cl.stop()


# ---------------------------------------------------------------------------
# The busy server (issue 32): both systems side by side under three workloads,
# one sample a second, every sample archived.  Measuring only: the write-up is
# bench/archive_report.py.

BUSY_CONF = ("autovacuum = on\ncheckpoint_timeout = '1h'\nmax_wal_size = '10GB'\n"
             "log_checkpoints = on\n")
PGS_CONF = ("pgsentinel_ash.sampling_period = 1\npgsentinel_archive.keep_one_in = 1\n"
            "pgsentinel_archive.interval = '{interval}'\n")
WORKLOADS = {
    "rw": "pgbench read-write, scale 10, -c 20 -j 2",
    "ro": "pgbench -S (select only), scale 10, -c 20 -j 2",
    "sleepers": "50 sessions in pg_sleep()",
}
# the relations of each system: its tables (partitions, sequences included);
# their indexes and TOAST are found from these
SYSTEM_RELS = {
    "pgsentinel": "n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S') AND "
                  "(c.relname LIKE 'pgsentinel\\_archive\\_%' "
                  "OR c.relname LIKE 'pgsentinel\\_rollup\\_%')",
    "pg_ash": "n.nspname = 'ash' AND c.relkind IN ('r', 'p', 'm', 'S')",
}
RELS_SQL = """
WITH base AS (
  SELECT c.oid, c.relname, c.reltoastrelid,
         coalesce((SELECT r.relname FROM pg_class r WHERE r.oid = pg_partition_root(c.oid)),
                  c.relname) AS tab
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {filter}),
rels AS (
  SELECT tab, 'table' AS part, oid FROM base
  UNION ALL
  SELECT b.tab, coalesce((SELECT r.relname FROM pg_class r
                           WHERE r.oid = pg_partition_root(i.indexrelid)), ic.relname),
         i.indexrelid
    FROM base b JOIN pg_index i ON i.indrelid = b.oid JOIN pg_class ic ON ic.oid = i.indexrelid
  UNION ALL
  SELECT tab, 'TOAST', reltoastrelid FROM base WHERE reltoastrelid <> 0
  UNION ALL
  SELECT b.tab, 'TOAST', i.indexrelid FROM base b JOIN pg_index i ON i.indrelid = b.reltoastrelid)
SELECT tab, part, coalesce(pg_relation_filenode(oid), 0), pg_relation_size(oid, 'main'),
       pg_relation_size(oid, 'fsm') + pg_relation_size(oid, 'vm')
  FROM rels"""


def relations(cl, system):
    """[(table, part, relfilenode, bytes, map bytes)]: every relation of the
    system, its main fork, and its free-space and visibility maps apart; a
    partition counts under its partitioned table, an index partition under its
    parent index; pg_ash's numbered slots (sample_0, query_map_1) as _N."""
    def norm(name):
        return re.sub(r"_[0-9]+(_|$)", r"_N\1", name)
    prefix = "ash." if system == "pg_ash" else ""
    out = []
    for line in cl.psql(RELS_SQL.format(filter=SYSTEM_RELS[system])).splitlines():
        tab, part, node, size, maps = line.split("|")
        out.append((prefix + norm(tab), norm(part), int(node), int(size), int(maps)))
    return out


def start_workload(cl, name):
    """Start the workload; returns the processes to kill at the end."""
    if name == "sleepers":
        cl.sleep_sessions(50)
        return []
    conn = ["-h", cl.dir, "-p", str(cl.port), "-U", "postgres"]
    run(as_user([os.path.join(cl.bindir, "pgbench"), "-i", "-q", "-s", "10"] + conn + ["postgres"]))
    mode = ["-S"] if name == "ro" else []
    return [subprocess.Popen(as_user(
        [os.path.join(cl.bindir, "pgbench"), "-n", "-c", "20", "-j", "2", "-T", "86400"]
        + mode + conn + ["postgres"]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]


POINT_SQL = """SELECT pg_current_wal_insert_lsn(), (SELECT checkpoint_lsn FROM pg_control_checkpoint()),
       (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter),
       (SELECT oid FROM pg_database WHERE datname = current_database()), {extra}"""


def point(cl, system, extra):
    """The cluster's state at one end of the window, read at once."""
    f = cl.psql(POINT_SQL.format(extra=extra)).split("|")
    return {"lsn": f[0], "ckpt_lsn": f[1], "ckpts": int(f[2]), "dboid": int(f[3]),
            "extra": f[4:], "rels": relations(cl, system), "time": time.time()}


def window(system, p0, p1, samples, rows, cl):
    """What is common to both systems: sizes, WAL, checkpoints over the window."""
    sizes, maps = {}, 0
    for sign, p in ((-1, p0), (1, p1)):
        for tab, part, _, size, m in p["rels"]:
            sizes[(tab, part)] = sizes.get((tab, part), 0) + sign * size
            maps += sign * m
    nodes = {}
    for p in (p0, p1):
        nodes.update({node: tab for tab, _, node, _, _ in p["rels"]})
    wal = wal_split(cl, p0["lsn"], p1["lsn"], p0["dboid"], nodes)
    return {"system": system, "samples": samples, "rows": rows,
            "seconds": p1["time"] - p0["time"],
            "bytes": sum(sizes.values()), "map_bytes": maps,
            "sizes": [[t, part, b] for (t, part), b in sorted(sizes.items())],
            "end_sizes": [[t, part, b] for t, part, _, b, _ in p1["rels"]],
            "checkpoints": p1["ckpts"] - p0["ckpts"],
            "checkpoint_moved": p1["ckpt_lsn"] != p0["ckpt_lsn"], **wal}


WALREC = re.compile(r"rmgr: (\S+)\s+len \(rec/tot\):\s*(\d+)/\s*(\d+), tx:\s*(\d+), "
                    r"lsn: \S+, prev \S+, desc: (\S+)(.*)")
BLKREF = re.compile(r"rel \d+/(\d+)/(\d+)")


def waldump(cl, start, end):
    """pg_waldump's records between two LSNs: (rmgr, aligned bytes, FPI bytes,
    xid, desc, the rest of the line)."""
    proc = subprocess.Popen([os.path.join(cl.bindir, "pg_waldump"), "-p",
                             os.path.join(cl.data, "pg_wal"), "-s", start, "-e", end],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        m = WALREC.match(line)
        if m:
            rec, tot = int(m.group(2)), int(m.group(3))
            yield m.group(1), (tot + 7) & ~7, tot - rec, int(m.group(4)), m.group(5), m.group(6)
    proc.wait()


def touched(rest, dboid, nodes):
    """The system's table whose relation the record's first block reference
    is in, or None."""
    for db, node in BLKREF.findall(rest):
        if int(db) == dboid and int(node) in nodes:
            return nodes[int(node)]
    return None


def wal_split(cl, start, end, dboid, nodes):
    """The system's WAL in [start, end): the records of every transaction that
    wrote one of its relations (subtransactions and commit records included),
    and the records with no transaction id that did (pruning, vacuum)."""
    xids = set()
    for rmgr, _, _, xid, desc, rest in waldump(cl, start, end):
        if xid and touched(rest, dboid, nodes):
            xids.add(xid)
        elif rmgr == "Transaction" and "subxacts:" in rest:
            subs = {int(x) for x in rest.split("subxacts:")[1].split(";")[0].split()}
            if xid in xids or subs & xids:
                xids |= subs | {xid}
    total, n, mine, by_rmgr, by_table, others = 0, 0, 0, {}, {}, {}
    for rmgr, size, fpi, xid, desc, rest in waldump(cl, start, end):
        total += size
        n += 1
        tab = touched(rest, dboid, nodes)
        if not ((xid in xids) if xid else tab):
            node = BLKREF.search(rest)
            key = f"{rmgr} {desc} {node.group(2) if node else '-'}"
            others[key] = others.get(key, 0) + size
            continue
        mine += size
        r = by_rmgr.setdefault(rmgr, [0, 0, 0])
        r[0], r[1], r[2] = r[0] + 1, r[1] + size, r[2] + fpi
        key = tab or ("(commit)" if rmgr == "Transaction" else "(other relations)")
        by_table[key] = by_table.get(key, 0) + size
    lsn_bytes = int(cl.psql(f"SELECT pg_wal_lsn_diff('{end}', '{start}')"))
    return {"wal": mine, "wal_records_all": total, "wal_records_n": n, "wal_lsn": lsn_bytes,
            "wal_by_rmgr": by_rmgr, "wal_by_table": by_table, "wal_others": others}


def cpu_of(pids):
    return {name: cpu_ticks(pid) for name, pid in pids.items()}


def cpu_pct(c0, c1, seconds):
    hz = os.sysconf("SC_CLK_TCK")
    return {name: 100.0 * (c1[name] - c0[name]) / hz / seconds for name in c0}


def busy_pgsentinel(args, workload):
    cl = Cluster(args.pg_bin, BUSY_CONF + PGS_CONF.format(interval=args.archive_interval))
    procs = []
    try:
        cl.psql("CREATE EXTENSION pg_stat_statements")
        cl.psql("CREATE EXTENSION pgsentinel")
        procs = start_workload(cl, workload)
        cl.wait("(SELECT archive_state FROM pgsentinel_status()) = 'ok'")
        time.sleep(args.warmup)
        caught_up(cl)
        # the window within one hour: the step that closes an hour writes
        # its hour rollups, once an hour, which a window of minutes would
        # count as every sample's (pg_ash's loop rolls up no hour either)
        left = 3600 - time.time() % 3600
        if left < args.seconds + 60:
            time.sleep(left + 15)
            caught_up(cl)
        pids = dict(zip(("sampler", "statements worker", "archiver"), map(int, cl.psql(
            "SELECT concat_ws(' ', worker_pid, coalesce(pgssh_worker_pid, 0), archive_worker_pid)"
            " FROM pgsentinel_status()").split())))
        pids = {name: pid for name, pid in pids.items() if pid}
        extra = "(SELECT samples_archived || '|' || rows_archived FROM pgsentinel_archive_state)"
        p0, c0 = point(cl, "pgsentinel", extra), cpu_of(pids)
        time.sleep(args.seconds)
        caught_up(cl)
        p1, c1 = point(cl, "pgsentinel", extra), cpu_of(pids)
        res = window("pgsentinel", p0, p1, int(p1["extra"][0]) - int(p0["extra"][0]),
                     int(p1["extra"][1]) - int(p0["extra"][1]), cl)
        res["cpu"] = cpu_pct(c0, c1, p1["time"] - p0["time"])
        # what the window's rows take at the least (bench/archive_floor.py)
        res["floor"] = archive_floor.measure(
            as_user([os.path.join(cl.bindir, "psql"), "-h", cl.dir, "-p", str(cl.port),
                     "-U", "postgres", "-d", "postgres"]), p0["time"], p1["time"])
        return res
    finally:
        for p in procs:
            p.kill()
        cl.stop()


def ash_loop(cl, n, name):
    """psql calling ash.take_sample() at each whole second n times, and
    ash.rollup_minute() at each whole minute, as pg_cron would."""
    path = os.path.join(cl.dir, name + ".sql")
    with open(path, "w") as f:
        f.write("SELECT pg_sleep(1 - extract(epoch FROM clock_timestamp()) % 1);\n"
                "SELECT ash.take_sample();\n"
                "SELECT ash.rollup_minute() WHERE extract(second FROM clock_timestamp()) < 1;\n"
                * n)
    os.chmod(path, 0o644)
    return subprocess.Popen(
        as_user(["env", "PGAPPNAME=" + name, os.path.join(cl.bindir, "psql"), "-XAtq",
                 "-v", "ON_ERROR_STOP=1", "-h", cl.dir, "-p", str(cl.port), "-U", "postgres",
                 "-f", path]), stdout=subprocess.DEVNULL)


def busy_pg_ash(args, workload):
    cl = Cluster(args.pg_bin, BUSY_CONF, preload="pg_stat_statements")
    procs = []
    try:
        install_pg_ash(cl, args.pg_ash)
        procs = start_workload(cl, workload)
        if ash_loop(cl, args.warmup, "ash_warmup").wait() != 0:
            raise SystemExit("pg_ash: the warm-up calls failed")
        extra = "(SELECT coalesce(sum(active_count), 0) FROM ash.sample)"
        p0 = point(cl, "pg_ash", extra)
        loop = ash_loop(cl, args.seconds, "ash_window")
        cl.wait("EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'ash_window')")
        pid = int(cl.psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'ash_window'"))
        c0, t0 = cpu_of({"take_sample backend": pid}), time.time()
        c1, t1 = c0, t0
        while loop.poll() is None:      # the backend's /proc entry goes with it
            try:
                c1, t1 = cpu_of({"take_sample backend": pid}), time.time()
            except FileNotFoundError:
                break
            time.sleep(0.2)
        loop.wait()
        if loop.returncode != 0:
            raise SystemExit("pg_ash: take_sample() calls failed")
        p1 = point(cl, "pg_ash", extra)
        res = window("pg_ash", p0, p1, args.seconds, int(p1["extra"][0]) - int(p0["extra"][0]), cl)
        res["cpu"] = cpu_pct(c0, c1, t1 - t0)
        return res
    finally:
        for p in procs:
            p.kill()
        cl.stop()


def busy(args):
    """Every workload, pgsentinel then pg_ash, each on a fresh cluster."""
    results = {"seconds": args.seconds, "warmup": args.warmup, "started": time.strftime(
        "%Y-%m-%d %H:%M:%S %Z"), "load_before": os.getloadavg(), "runs": []}
    for workload in args.workloads.split(","):
        for system in args.systems.split(","):
            measure = {"pgsentinel": busy_pgsentinel, "pg_ash": busy_pg_ash}[system]
            print(f"{workload} / {system} ...", file=sys.stderr, flush=True)
            r = measure(args, workload)
            r["workload"] = workload
            r["load_after"] = os.getloadavg()
            results["runs"].append(r)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg-bin", required=True)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--samples", type=int, default=600)
    ap.add_argument("--cpu-seconds", type=int, default=60)
    ap.add_argument("--pg-ash", help="pg_ash's sql/ash-install.sql: measure it side by side")
    ap.add_argument("--pg-ash-samples", type=int, default=300)
    ap.add_argument("--pgbench", action="store_true",
                    help="also measure size and WAL under pgbench -S -c 20 (changing statements)")
    ap.add_argument("--busy", action="store_true",
                    help="the busy server (issue 32) instead: both systems, three workloads")
    ap.add_argument("--seconds", type=int, default=300, help="--busy: the window")
    ap.add_argument("--warmup", type=int, default=60, help="--busy: seconds before the window")
    ap.add_argument("--workloads", default="rw,ro,sleepers", help="--busy: among rw,ro,sleepers")
    ap.add_argument("--systems", default="pgsentinel,pg_ash", help="--busy: among these")
    ap.add_argument("--json", help="--busy: also save the raw results there")
    ap.add_argument("--archive-interval", default="1min",
                    help="--busy: pgsentinel_archive.interval (the batch's span)")
    args = ap.parse_args()
    if args.busy:
        if not args.pg_ash:
            ap.error("--busy needs --pg-ash")
        res = busy(args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        sys.stdout.write(archive_report.busy_markdown(res))
        return
    sw = size_and_wal(args)
    c = cpu(args)
    q = queries(args)
    a = pg_ash_side(args) if args.pg_ash else None
    pb = size_and_wal(args, pgbench=True) if args.pgbench else None
    ash = (lambda k, fmt: fmt.format(a[k]) if a else "(not run)")
    print(f"| figure ({args.sessions} sleeping sessions) | pgsentinel 2.1 | pg_ash, same run |")
    print("|---|---|---|")
    print(f"| disk per archived session-sample, indexes included | "
          f"{sw['bytes_per_row']:.1f} B ({sw['bytes']} B / {sw['rows']} rows) | "
          f"{ash('bytes_per_row', '{:.1f} B')} |")
    print(f"| WAL per archived sample | {sw['wal_per_sample']:.0f} B "
          f"({sw['wal']} B / {sw['samples']} samples, {sw['rows_per_sample']:.1f} rows each) | "
          f"{ash('wal_per_sample', '{:.0f} B')} |")
    print(f"| archiver CPU, 1 s sampling, keep_one_in = 1 | {c['archiver_pct']:.3f} % of a core "
          f"(sampler {c['sampler_pct']:.3f} %, over {c['seconds']:.0f} s; last cycle {c['last_us']} us) | "
          f"{ash('take_ms_median', 'take_sample() {:.1f} ms (median)')} |")
    if pb:
        print(f"| pgbench -S -c 20 (statements change at every sample): disk per session-sample, "
              f"indexes included | {pb['bytes_per_row']:.1f} B ({pb['bytes']} B / {pb['rows']} rows) | |")
        print(f"| pgbench -S -c 20: WAL per archived sample | {pb['wal_per_sample']:.0f} B "
              f"({pb['rows_per_sample']:.1f} rows each) | |")
    for k, v in q.items():
        print(f"| {k} | {v:.1f} ms | |")


if __name__ == "__main__":
    main()
