#!/usr/bin/env python3
"""The report writer's output has not changed (no server needed).

    python3 bench/test_report_writer.py [REV]

Renders every saved run of bench/runs/ (what bench/run.sh wrote here) with the report writer of git
revision REV (default HEAD) and with the working tree's, in three forms
each (as saved with the run-to-run table; --quick; with the optional
sections missing and problems found), and compares the reports byte for
byte.  Exit status 0 when they are all the same.
"""

import difflib
import os
import subprocess
import sys
import tempfile

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))

# Run in a process of its own for each writer: argv = directory of the
# writer's modules, bench directory (its runs/ are read), output directory.
RENDER = r'''
import json, os, sys, types
wdir, bench_dir, out = sys.argv[1:4]
sys.path.insert(0, wdir)
try:
    import report_writer as rw
except ImportError:
    import bench as rw          # before the writer had a module of its own
rw.BENCH_DIR = bench_dir
OPTIONAL = ("same_cluster", "breakdown", "profile", "conn1000", "tps", "cpu_per_tx",
            "callgrind", "callgrind_parts", "shmem", "read", "pgssh")
runs = os.path.join(bench_dir, "runs")
for fn in sorted(f for f in os.listdir(runs) if f.endswith(".json")):
    for form in ("saved", "quick", "sparse"):
        res = json.load(open(os.path.join(runs, fn)))
        res["shmem"] = {int(k): v for k, v in res.get("shmem", {}).items()}
        if form == "sparse":
            for k in OPTIONAL:
                res.pop(k, None)
            res["checks"] = ["pgs10ms-fresh: a row too many"]
            res["log_issues"] = ["ERROR:  something"]
        h = rw.headline(res)
        res["headline"] = h
        res["targets"] = rw.targets(res, h)
        res["insight"] = rw.insight(res)
        args = types.SimpleNamespace(quick=form == "quick",
                                     command=res.get("command", "bench/run.sh"))
        rw.write_report(res, res["facts"], args, os.path.join(out, fn[:-5] + "-" + form + ".md"),
                        rw.history_rows(None) if form == "saved" else [])
'''


def render(wdir, out):
    os.makedirs(out)
    subprocess.run([sys.executable, "-c", RENDER, wdir, BENCH_DIR, out], check=True)
    return {f: open(os.path.join(out, f), "rb").read() for f in sorted(os.listdir(out))}


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    runs = os.path.join(BENCH_DIR, "runs")
    if not any(f.endswith(".json") for f in (os.listdir(runs) if os.path.isdir(runs) else [])):
        sys.exit("no saved run in %s: run bench/run.sh (or copy a run-*.json there) first" % runs)
    repo = os.path.dirname(BENCH_DIR)

    def git_show(path):
        return subprocess.run(["git", "-C", repo, "show", "%s:%s" % (rev, path)],
                              capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "old")
        os.makedirs(old)
        try:
            files = {"report_writer.py": git_show("bench/report_writer.py"),
                     "configs.py": git_show("bench/configs.py")}
        except subprocess.CalledProcessError:
            files = {"bench.py": git_show("bench/bench.py")}
        for name, text in files.items():
            with open(os.path.join(old, name), "wb") as f:
                f.write(text)
        a = render(old, os.path.join(tmp, "out-old"))
        b = render(BENCH_DIR, os.path.join(tmp, "out-new"))
    bad = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
    for f in bad[:3]:
        sys.stdout.writelines(difflib.unified_diff(
            a.get(f, b"").decode().splitlines(True), b.get(f, b"").decode().splitlines(True),
            "%s (%s)" % (f, rev), "%s (working tree)" % f))
    print("%d reports from %d runs: %d identical to %s's, %d different" % (
        len(a), len(a) // 3, len(a) - len(bad), rev, len(bad)))
    return 1 if bad or not a else 0


if __name__ == "__main__":
    sys.exit(main())
