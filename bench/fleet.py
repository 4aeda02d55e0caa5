#!/usr/bin/env python3
"""The fleet's costs, measured on throwaway clusters (docs/fleet.md).

    python3 bench/fleet.py --pg-bin DIR [--sessions 50] [--seconds 120]

DIR as for bench/archive.py (a PostgreSQL 15 with pgsentinel installed, and
dblink and postgres_fdw); run as root, clusters as pgsentinel_test in /tmp.

A source with N sessions sleeping (all active at every sample) samples every
0.1 s and archives 1 sample in 10 every 5 s (1 archived sample per second,
ten times the default rate, so that a short run sees many); a repository
takes it by logical replication and pulls the same source as a second server
every 10 s (the pull's default).  Measures over --seconds:
  1. WAL written on the source per archived sample, with wal_level = logical
     and the subscription, and on a second source with wal_level = replica
     and no fleet: the difference is what the fleet adds;
  2. the repository's bytes per archived sample and per server;
  3. the lag from a sample's time to its arrival in the repository, per
     transport (the repository polled every 0.1 s).
Figures per day are at the defaults (1 s sampling, keep_one_in 10: 8,640
archived samples a day).  Prints a Markdown table.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archive  # noqa: E402  (the Cluster of bench/archive.py)

PER_DAY = 8640
SOURCE_CONF = ("pgsentinel_ash.sampling_period = 0.1\npgsentinel_archive.keep_one_in = 10\n"
               "pgsentinel_archive.interval = '5s'\nmax_replication_slots = 10\n"
               "max_wal_senders = 10\n")


class Cluster(archive.Cluster):
    """archive.Cluster on a port of its own (several run at once)."""
    offset = 0

    def __init__(self, bindir, conf):
        Cluster.offset += 1
        saved = os.getpid

        os.getpid = lambda: saved() + 1000 * Cluster.offset
        try:
            super().__init__(bindir, conf)
        finally:
            os.getpid = saved

    def conninfo(self):
        return f"host={self.dir} port={self.port} dbname=postgres user=postgres"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg-bin", required=True)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=120)
    args = ap.parse_args()
    clusters = []
    try:
        plain = Cluster(args.pg_bin, SOURCE_CONF + "wal_level = replica\n")
        clusters.append(plain)
        src = Cluster(args.pg_bin, SOURCE_CONF + "wal_level = logical\n")
        clusters.append(src)
        repo = Cluster(args.pg_bin, "pgsentinel_archive.interval = '1s'\n")
        clusters.append(repo)
        for cl in (plain, src, repo):
            cl.psql("CREATE EXTENSION pgsentinel")
        repo.psql("CREATE SCHEMA fleet_ext; CREATE EXTENSION dblink SCHEMA fleet_ext; CREATE EXTENSION postgres_fdw")
        plain.sleep_sessions(args.sessions)
        src.sleep_sessions(args.sessions)
        for cl in (plain, src):
            cl.wait("(SELECT archive_state FROM pgsentinel_status()) = 'ok'")
        repo.psql(f"SELECT pgsentinel_fleet_add('src', '{src.conninfo()}')")
        repo.psql(f"SELECT pgsentinel_fleet_add('src-pulled', '{src.conninfo()}', "
                  "method => 'pull', keep_one_in => 10)")
        repo.wait("(SELECT count(*) = 2 FROM pgsentinel_fleet_status "
                  "WHERE last_sample_time IS NOT NULL)")

        # lag, then WAL and size over the same seconds
        seen = {}
        lags = {"src": [], "src-pulled": []}
        size0 = {}
        for name in lags:
            size0[name] = int(repo.psql(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                f"WHERE c.relkind = 'r' AND c.relname ~ ('^pgsentinel_fleet_[a-z_]+_' || "
                f"(SELECT server_id FROM pgsentinel_fleet_status WHERE name = '{name}') || '_')"))
            seen[name] = repo.psql(f"SELECT max(sample_time) FROM pgsentinel_fleet_sample_archive WHERE server = '{name}'")
        n0 = {name: int(repo.psql(f"SELECT count(*) FROM pgsentinel_fleet_sample_archive WHERE server = '{name}'"))
              for name in lags}
        archive.caught_up(plain)
        archive.caught_up(src)
        p0 = plain.psql("SELECT samples_archived || ' ' || pg_current_wal_lsn() FROM pgsentinel_archive_state")
        s0 = src.psql("SELECT samples_archived || ' ' || pg_current_wal_lsn() FROM pgsentinel_archive_state")
        end = time.time() + args.seconds
        while time.time() < end:
            for name in lags:
                rows = repo.psql(
                    "SELECT string_agg(extract(epoch FROM clock_timestamp() - sample_time)::text, ' ') "
                    f"FROM pgsentinel_fleet_sample_archive WHERE server = '{name}' AND sample_time > '{seen[name]}'")
                if rows:
                    lags[name] += [float(x) for x in rows.split()]
                    seen[name] = repo.psql(
                        f"SELECT max(sample_time) FROM pgsentinel_fleet_sample_archive WHERE server = '{name}'")
            time.sleep(0.1)
        archive.caught_up(plain)
        archive.caught_up(src)
        p1 = plain.psql("SELECT samples_archived || ' ' || pg_current_wal_lsn() FROM pgsentinel_archive_state")
        s1 = src.psql("SELECT samples_archived || ' ' || pg_current_wal_lsn() FROM pgsentinel_archive_state")

        def per_sample(cl, a, b):
            (na, la), (nb, lb) = a.split(), b.split()
            return int(cl.psql(f"SELECT pg_wal_lsn_diff('{lb}', '{la}')")) / max(int(nb) - int(na), 1)
        wal_plain = per_sample(plain, p0, p1)
        wal_src = per_sample(src, s0, s1)
        out = []
        for name in lags:
            size1 = int(repo.psql(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                f"WHERE c.relkind = 'r' AND c.relname ~ ('^pgsentinel_fleet_[a-z_]+_' || "
                f"(SELECT server_id FROM pgsentinel_fleet_status WHERE name = '{name}') || '_')"))
            n1 = int(repo.psql(f"SELECT count(*) FROM pgsentinel_fleet_sample_archive WHERE server = '{name}'"))
            out.append((name, (size1 - size0[name]) / max(n1 - n0[name], 1), lags[name]))
        print(f"| figure ({args.sessions} sleeping sessions, {args.seconds} s) | value |")
        print("|---|---|")
        print(f"| source WAL per archived sample, wal_level = replica, no fleet | {wal_plain:,.0f} B |")
        print(f"| source WAL per archived sample, wal_level = logical, subscribed | {wal_src:,.0f} B |")
        print(f"| WAL the fleet adds on a source per day (defaults: 8,640 archived samples) | "
              f"{(wal_src - wal_plain) * PER_DAY / 1e6:,.2f} MB |")
        print(f"| source WAL per day with the fleet (defaults) | {wal_src * PER_DAY / 1e6:,.2f} MB |")
        for name, per, lag in out:
            how = "logical" if name == "src" else "pull"
            print(f"| repository bytes per archived sample ({how}) | {per:,.0f} B |")
            print(f"| repository bytes per server-day ({how}, defaults) | {per * PER_DAY / 1e6:,.2f} MB |")
            if lag:
                print(f"| lag sample -> repository ({how}): median / max | "
                      f"{statistics.median(lag):.2f} s / {max(lag):.2f} s |")
    finally:
        for cl in clusters:
            cl.stop()


if __name__ == "__main__":
    main()
