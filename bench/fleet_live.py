#!/usr/bin/env python3
"""A repository fed by live sources (issue 30, part 4).

    python3 bench/fleet_live.py --pg-bin DIR [--sources 10] [--seconds 300]
                                [--warmup 60] [--sleepers 50] [--clients 4]
                                [--tps 50]

DIR as for bench/archive.py; run as root, every cluster as pgsentinel_test
in /tmp, Unix sockets only, removed at the end.

--sources small clusters (PostgreSQL's defaults but for the settings below)
sample every second (pgsentinel's default) and archive every sample
(keep_one_in 1, archive interval 5 s, the default): the first half each with
--sleepers sessions in pg_sleep(), the second half each with pgbench
read-write (-c --clients, throttled to --tps transactions a second: the
statements change at every sample).  One repository (archive interval 5 s,
autovacuum on) takes the odd-numbered sources by logical replication and
pulls the even-numbered ones every 5 s (pull_interval => '5s',
keep_one_in => 1), so that each workload has both transports.

After the servers' first samples arrived and --warmup seconds, over
--seconds:
  - lag: the repository polled every 0.2 s on one connection; a sample's lag
    is the time from its sample_time to the poll that first saw it (all
    clusters share this machine's clock), median / 90th percentile / max per
    transport and workload;
  - repository CPU (utime + stime from /proc: the postmaster and every child
    process, the polling backend excluded; exited children through the
    postmaster's cutime + cstime), in % of a core and seconds per
    server-day;
  - repository WAL (pg_current_wal_lsn), per server-day;
  - disk per server: every partition of that server (raw tables, rollups,
    indexes, TOAST), per sample and per server-day.
Then one server's HTML report and the overview of every server over the last
hour, timed.  Per-day figures are at this rate: 86,400 samples a day (at
the default keep_one_in 10 a source archives a tenth of them).
Prints a Markdown table.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archive  # noqa: E402  (run, as_user)
import fleet  # noqa: E402  (a Cluster on a port of its own)

DAY = 86400
SOURCE_CONF = ("pgsentinel_ash.sampling_period = 1\npgsentinel_archive.keep_one_in = 1\n"
               "pgsentinel_archive.interval = '5s'\nwal_level = logical\n"
               "max_replication_slots = 10\nmax_wal_senders = 10\n"
               "shared_buffers = '32MB'\n")
REPO_CONF = ("pgsentinel_archive.interval = '5s'\nautovacuum = on\n"
             "max_worker_processes = 40\nmax_logical_replication_workers = 30\n"
             "max_sync_workers_per_subscription = 2\n")

SERVER_SIZE_SQL = """SELECT f.name, coalesce(sum(pg_total_relation_size(c.oid)), 0),
       (SELECT count(*) FROM pgsentinel_fleet_sample_archive s WHERE s.server_id = f.server_id)
  FROM pgsentinel_fleet_server f
  LEFT JOIN pg_class c ON c.relkind = 'r'
       AND c.relname ~ ('^pgsentinel_fleet_[a-z_]+_' || f.server_id || '_')
 GROUP BY f.name, f.server_id ORDER BY f.name"""


class Session:
    """One psql connection kept open: a query, its rows back."""

    def __init__(self, cl):
        self.p = subprocess.Popen(archive.as_user(
            [os.path.join(cl.bindir, "psql"), "-XAtq", "-h", cl.dir, "-p", str(cl.port),
             "-U", "postgres", "-d", "postgres"]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def query(self, sql):
        self.p.stdin.write(sql + ";\n\\echo __end__\n")
        self.p.stdin.flush()
        rows = []
        for line in self.p.stdout:
            line = line.rstrip("\n")
            if line == "__end__":
                return rows
            rows.append(line)
        raise SystemExit("the polling connection closed")

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[1]), [int(x) for x in fields[11:15]]


def repo_cpu_ticks(postmaster, excluded):
    """utime + stime of a cluster's processes, exited children included."""
    _, (ut, st, cut, cst) = stat(postmaster)
    total = ut + st + cut + cst
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in excluded:
            continue
        try:
            ppid, (ut, st, _, _) = stat(d)
        except (FileNotFoundError, ProcessLookupError):
            continue
        if ppid == postmaster:
            total += ut + st
    return total


def sizes(repo):
    out = {}
    for line in repo.psql(SERVER_SIZE_SQL).splitlines():
        name, size, n = line.split("|")
        out[name] = (int(size), int(n))
    return out


def timed(repo, sql):
    t = time.time()
    repo.psql(sql)
    return time.time() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg-bin", required=True)
    ap.add_argument("--sources", type=int, default=10)
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--sleepers", type=int, default=50)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--tps", type=int, default=50)
    args = ap.parse_args()
    clusters, loads = [], []
    try:
        repo = fleet.Cluster(args.pg_bin, REPO_CONF)
        clusters.append(repo)
        repo.psql("CREATE EXTENSION pgsentinel; CREATE SCHEMA fleet_ext; "
                  "CREATE EXTENSION dblink SCHEMA fleet_ext; CREATE EXTENSION postgres_fdw")
        servers = []
        for i in range(1, args.sources + 1):
            src = fleet.Cluster(args.pg_bin, SOURCE_CONF)
            clusters.append(src)
            src.psql("CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pgsentinel")
            work = "sleepers" if i <= args.sources // 2 else "pgbench"
            if work == "sleepers":
                src.sleep_sessions(args.sleepers)
            else:
                archive.run(archive.as_user(
                    [os.path.join(args.pg_bin, "pgbench"), "-i", "-q", "-s", "1",
                     "-h", src.dir, "-p", str(src.port), "-U", "postgres", "postgres"]))
                loads.append(subprocess.Popen(archive.as_user(
                    [os.path.join(args.pg_bin, "pgbench"), "-n", "-c", str(args.clients),
                     "-j", "1", "-R", str(args.tps), "-T", "86400",
                     "-h", src.dir, "-p", str(src.port), "-U", "postgres", "postgres"]),
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            how = "logical" if i % 2 else "pull"
            name = f"s{i:02d}"
            extra = ", method => 'pull', keep_one_in => 1, pull_interval => '5s'" \
                if how == "pull" else ""
            repo.psql(f"SELECT pgsentinel_fleet_add('{name}', '{src.conninfo()}'{extra})")
            servers.append((name, how, work))
        repo.wait("(SELECT count(*) FROM pgsentinel_fleet_status "
                  f"WHERE last_sample_time IS NOT NULL) = {args.sources}", timeout=300)
        time.sleep(args.warmup)

        poll = Session(repo)
        poll_pid = int(poll.query("SELECT pg_backend_pid()")[0])
        with open(os.path.join(repo.data, "postmaster.pid")) as f:
            postmaster = int(f.readline())
        ids = dict(line.split("|") for line in repo.psql(
            "SELECT server_id, name FROM pgsentinel_fleet_server").splitlines())
        seen, lags = set(), {}
        for row in poll.query("SELECT server_id, sample_time FROM pgsentinel_fleet_sample_archive "
                              "WHERE sample_time > now() - interval '10 minutes' "
                              "AND batch_start >= date_trunc('day', now() - interval '10 minutes', 'UTC') "
                              "AND batch_end > now() - interval '10 minutes'"):
            seen.add(tuple(row.split("|")))
        size0 = sizes(repo)
        wal0 = repo.psql("SELECT pg_current_wal_lsn()")
        cpu0, t0 = repo_cpu_ticks(postmaster, {poll_pid}), time.time()
        end = t0 + args.seconds
        while time.time() < end:
            for row in poll.query(
                    "SELECT server_id, sample_time, "
                    "extract(epoch FROM clock_timestamp() - sample_time) "
                    "FROM pgsentinel_fleet_sample_archive "
                    "WHERE sample_time > now() - interval '2 minutes' "
                    "AND batch_start >= date_trunc('day', now() - interval '2 minutes', 'UTC') "
                    "AND batch_end > now() - interval '2 minutes'"):
                sid, st, lag = row.split("|")
                if (sid, st) not in seen:
                    seen.add((sid, st))
                    lags.setdefault(ids[sid], []).append(float(lag))
            time.sleep(0.2)
        cpu1, t1 = repo_cpu_ticks(postmaster, {poll_pid}), time.time()
        wal1 = repo.psql("SELECT pg_current_wal_lsn()")
        poll.close()
        size1 = sizes(repo)
        wal = int(repo.psql(f"SELECT pg_wal_lsn_diff('{wal1}', '{wal0}')"))
        secs = t1 - t0
        cpu = (cpu1 - cpu0) / os.sysconf("SC_CLK_TCK")
        errors = repo.psql("SELECT string_agg(name || ': ' || last_error, '; ') "
                           "FROM pgsentinel_fleet_server WHERE last_error IS NOT NULL")
        report = timed(repo, "SELECT pgsentinel_report(now() - interval '1 hour', now(), "
                       f"format => 'html', server => '{servers[0][0]}')")
        overview = timed(repo, "SELECT pgsentinel_fleet_overview_html(now() - interval '1 hour', now())")

        n = args.sources
        print(f"| repository of {n} live sources, {args.seconds} s after {args.warmup} s "
              "of warm-up | value |")
        print("|---|---|")
        print(f"| repository CPU, all its processes | {100 * cpu / secs:.1f} % of a core "
              f"({100 * cpu / secs / n:.2f} % per server) |")
        print(f"| repository CPU per server-day | {cpu / secs / n * DAY:,.0f} s |")
        print(f"| repository WAL per server-day | {wal / secs / n * DAY / 1e6:,.0f} MB |")
        print(f"| one server's HTML report, last hour | {report:.2f} s |")
        print(f"| overview of {n} servers (HTML), last hour | {overview:.2f} s |")
        print(f"| servers' errors | {errors or 'none'} |")
        print()
        print("| transport, workload | servers | samples | lag median / p90 / max | "
              "disk per sample | disk per server-day |")
        print("|---|---|---|---|---|---|")
        for how in ("logical", "pull"):
            for work in ("sleepers", "pgbench"):
                names = [s for s, h, w in servers if h == how and w == work]
                if not names:
                    continue
                lag = sorted(x for s in names for x in lags.get(s, []))
                got = sum(size1[s][1] - size0[s][1] for s in names)
                grew = sum(size1[s][0] - size0[s][0] for s in names)
                per = grew / max(got, 1)
                q = lag[int(0.9 * (len(lag) - 1))] if lag else float("nan")
                lagtxt = (f"{statistics.median(lag):.2f} / {q:.2f} / {max(lag):.2f} s"
                          if lag else "none seen")
                print(f"| {how}, {work} | {len(names)} | {got} | {lagtxt} | {per:,.0f} B | "
                      f"{per * DAY / 1e6:,.1f} MB |")
    finally:
        for p in loads:
            p.kill()
        for cl in clusters:
            cl.stop()


if __name__ == "__main__":
    main()
