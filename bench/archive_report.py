"""The write-up of bench/archive.py --busy: Markdown from its results (a dict,
as saved with --json), no measuring here.

    python3 bench/archive_report.py RUN.json [RUN2.json ...]

writes the last run in full and, given several, their main figures side by side.
"""
import json
import sys

import archive_floor

SYSTEMS = ("pgsentinel", "pg_ash")
WORKLOADS = {
    "rw": "pgbench read-write -c 20",
    "ro": "pgbench -S -c 20",
    "sleepers": "50 sleepers",
}
DAY = 86400


def human(n):
    """Bytes, in B, kB, MB or GB (powers of 1000)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f} B"


def per(n, d):
    return n / d if d else float("nan")


def cpu_text(r):
    cpu = r.get("cpu", {})
    if r["system"] == "pgsentinel":
        return (f"archiver {cpu.get('archiver', 0):.2f} % (sampler {cpu.get('sampler', 0):.2f} %, "
                f"statements worker {cpu.get('statements worker', 0):.2f} %)")
    return f"take_sample() backend {cpu.get('take_sample backend', 0):.2f} %"


def main_table(res):
    out = ["| workload | system | samples | session rows / sample | disk / session-row | "
           "disk / sample | disk / day | archive WAL / sample | archive WAL / day | "
           "share of the cluster's WAL | CPU, % of a core | checkpoint in window |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        s, rows = r["samples"], r["rows"]
        out.append(
            f"| {WORKLOADS[r['workload']]} | {r['system']} | {s} | {per(rows, s):.1f} | "
            f"{per(r['bytes'], rows):,.1f} B | {human(per(r['bytes'], s))} | "
            f"{human(per(r['bytes'], s) * DAY)} | {human(per(r['wal'], s))} | "
            f"{human(per(r['wal'], s) * DAY)} | {100 * per(r['wal'], r['wal_records_all']):.1f} % | "
            f"{cpu_text(r)} | {'yes' if r['checkpoints'] or r['checkpoint_moved'] else 'no'} |")
    return out


def sizes_table(r):
    """Where the disk bytes of one run went: per table, its indexes and TOAST."""
    total = r["bytes"] or 1
    out = [f"| {r['system']}: table | part | bytes in the window | per sample | per day | share |",
           "|---|---|---|---|---|---|"]
    for tab, part, b in sorted(r["sizes"], key=lambda x: -x[2]):
        if b:
            out.append(f"| {tab} | {part} | {b:,} | {human(per(b, r['samples']))} | "
                       f"{human(per(b, r['samples']) * DAY)} | {100 * b / total:.1f} % |")
    out.append(f"| **all** | | {r['bytes']:,} | {human(per(r['bytes'], r['samples']))} | "
               f"{human(per(r['bytes'], r['samples']) * DAY)} | 100 % |")
    return out


def per_table(r):
    """Disk (heap, indexes, TOAST) and WAL of one run, a line per table."""
    tabs = {}
    for tab, part, b in r["sizes"]:
        t = tabs.setdefault(tab, [0, 0, 0, 0])
        t[0 if part == "table" else 2 if part == "TOAST" else 1] += b
    for tab, b in r["wal_by_table"].items():
        tabs.setdefault(tab, [0, 0, 0, 0])[3] += b
    s = r["samples"]
    out = [f"| {r['system']}: table | heap / sample | indexes / sample | TOAST / sample | "
           "disk / sample | share of disk | WAL / sample | share of WAL |",
           "|---|---|---|---|---|---|---|---|"]
    for tab, (h, i, t, w) in sorted(tabs.items(), key=lambda x: -(sum(x[1][:3]) + x[1][3])):
        if h or i or t or w >= 0.005 * r["wal"]:
            d = h + i + t
            out.append(f"| {tab} | {human(per(h, s))} | {human(per(i, s))} | {human(per(t, s))} | "
                       f"{human(per(d, s))} | {100 * per(d, r['bytes']):.1f} % | "
                       f"{human(per(w, s))} | {100 * per(w, r['wal']):.1f} % |")
    out.append(f"| **all** | | | | {human(per(r['bytes'], s))} | 100 % | "
               f"{human(per(r['wal'], s))} | 100 % |")
    return out


def wal_tables(r):
    """The system's WAL of one run by resource manager, and by table."""
    total = r["wal"] or 1
    out = [f"| {r['system']}: resource manager | records | bytes | of which full-page images | share |",
           "|---|---|---|---|---|"]
    for rmgr, (n, b, fpi) in sorted(r["wal_by_rmgr"].items(), key=lambda x: -x[1][1]):
        out.append(f"| {rmgr} | {n:,} | {b:,} | {fpi:,} | {100 * b / total:.1f} % |")
    out += ["", f"| {r['system']}: WAL by the table of the record's block | bytes | per sample | share |",
            "|---|---|---|---|"]
    for tab, b in sorted(r["wal_by_table"].items(), key=lambda x: -x[1]):
        out.append(f"| {tab} | {b:,} | {human(per(b, r['samples']))} | {100 * b / total:.1f} % |")
    return out


def others_text(r):
    """The rest of the cluster's WAL, its three largest resource managers."""
    by = {}
    for key, b in r.get("wal_others", {}).items():
        by[key.split()[0]] = by.get(key.split()[0], 0) + b
    top = sorted(by.items(), key=lambda x: -x[1])[:3]
    return ", ".join(f"{rmgr} {human(b)}" for rmgr, b in top) or "not recorded"


def window_notes(res):
    out = []
    for r in res["runs"]:
        out.append(f"- {WORKLOADS[r['workload']]}, {r['system']}: {r['seconds']:.0f} s, "
                   f"{r['samples']} samples, {r['rows']:,} session rows; cluster WAL "
                   f"{human(r['wal_lsn'])} by LSN ({r['wal_records_n']:,} records, "
                   f"{human(r['wal_records_all'])} without page headers), of which the "
                   f"system's {human(r['wal'])} (the rest: {others_text(r)}); its "
                   f"free-space and visibility maps grew {human(r.get('map_bytes', 0))} "
                   f"(not in the disk figures); checkpoints "
                   f"in the window: {r['checkpoints']}; load average after: "
                   f"{r['load_after'][0]:.2f}.")
    return out


def runs_table(all_res):
    """The main figures of several runs side by side (run-to-run noise)."""
    out = ["| workload | system | " + " | ".join(
               f"run {i + 1}: disk / row, WAL / sample, CPU" for i in range(len(all_res))) + " |",
           "|---|---|" + "---|" * len(all_res)]
    for j, r0 in enumerate(all_res[0]["runs"]):
        cells = []
        for res in all_res:
            r = res["runs"][j]
            cpu = r["cpu"].get("archiver", r["cpu"].get("take_sample backend", 0))
            cells.append(f"{per(r['bytes'], r['rows']):,.1f} B, {human(per(r['wal'], r['samples']))}, "
                         f"{cpu:.2f} %")
        out.append(f"| {WORKLOADS[r0['workload']]} | {r0['system']} | " + " | ".join(cells) + " |")
    return out


def busy_markdown(res):
    out = [f"Run {res['started']}, window {res['seconds']} s after a {res['warmup']} s warm-up "
           f"(load average before: {res['load_before'][0]:.2f}).", ""]
    out += main_table(res)
    out += ["", "Archive WAL: the records of the transactions that wrote one of the system's "
            "relations (tables, partitions, indexes, TOAST, sequences, found by relfilenode in "
            "pg_waldump's block references), with their subtransactions and commit records, "
            "and the records without a transaction id that touched one (pruning, vacuum); "
            "each record's length aligned to 8 bytes as in the WAL, page headers not counted. "
            "The rest of the cluster's WAL is the workload's (pgbench, autovacuum).", ""]
    out += window_notes(res)
    for r in res["runs"]:
        out += ["", f"#### {WORKLOADS[r['workload']]}, {r['system']}", ""]
        out += per_table(r) + [""] + sizes_table(r) + [""] + wal_tables(r)
        if r.get("floor"):
            out += ["", "The window's rows kept exactly, an estimate of the least "
                    "(bench/archive_floor.py: each column's stream in the encoding that "
                    "favours it, compressed apart by xz -9e; dictionary ids not counted):",
                    ""] + archive_floor.markdown(r["floor"])
    return "\n".join(out) + "\n"


def main(paths):
    all_res = []
    for path in paths:
        with open(path) as f:
            all_res.append(json.load(f))
    sys.stdout.write(busy_markdown(all_res[-1]))
    if len(all_res) > 1:
        sys.stdout.write("\nRun to run (archiver's CPU for pgsentinel, take_sample()'s "
                         "backend for pg_ash, % of a core):\n\n"
                         + "\n".join(runs_table(all_res)) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
