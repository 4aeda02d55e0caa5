"""Write-up of a pgsentinel benchmark run (stdlib only).

bench/bench.py measures and keeps its results in one dict (saved as
bench/runs/run-*.json); this module turns such a dict into prose:
add_summary() adds the headline figures, the verdicts against the targets
and the reading of the sampler breakdown, write_report() writes
bench/REPORT.md, one function per section, and history_rows() reads the
saved runs for the run-to-run table.  `bench.py --report-from FILE` rewrites
the report from a saved run without measuring anything.
"""

import json
import os
import statistics

from configs import (BASE_SETTINGS_TEXT, CG_CONFIGS, CG_LABELS, CG_REFERENCE, CONFIGS,
                     FRESH_ENTRIES, FULL_ENTRIES, TPS_CONFIGS, sampler_variants)

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))


def mmm(xs, fmt="%.1f"):
    if not xs:
        return "n/a"
    return "%s / %s / %s" % (fmt % min(xs), fmt % statistics.median(xs), fmt % max(xs))


def med(xs):
    return statistics.median(xs) if xs else None


def ratio(a, b, fmt="%.3f"):
    if a is None or b is None or b == 0:
        return "n/a"
    return fmt % (a / b)



def headline(res):
    """Short figures for the run-to-run table and the targets."""
    m1 = res["metric1"]
    h = {}
    h["pgs10"] = med([m["us_per_sample"] for m in m1.get("pgs10ms-fresh", [])])
    h["pgs10full"] = med([m["us_per_sample"] for m in m1.get("pgs10ms-full", [])])
    h["pws10"] = med([m["us_per_sample"] for m in m1.get("pws10ms", [])])
    h["pgs1"] = med([m["us_per_sample"] for m in m1.get("pgs1s-fresh", [])])
    h["pgs1full"] = med([m["us_per_sample"] for m in m1.get("pgs1s-full", [])])
    h["pws1"] = med([m["us_per_sample"] for m in m1.get("pws1s", [])])
    h["pgs100"] = med([m["us_per_sample"] for m in m1.get("pgs100ms-fresh", [])])
    h["pgs100full"] = med([m["us_per_sample"] for m in m1.get("pgs100ms-full", [])])
    sc = res.get("same_cluster", [])
    if sc:
        h["same_pgs"] = med([m["pgs"]["us_per_sample"] for m in sc])
        h["same_pws"] = med([m["pws"]["us_per_sample"] for m in sc])
        h["same_ratio"] = med([m["pgs"]["us_per_sample"] / max(m["pws"]["us_per_sample"], 1e-9)
                               for m in sc])
    cg = res.get("callgrind", {})
    if cg.get("none") and cg.get("pgsentinel"):
        b = med([x["per_stmt"] for x in cg["none"]])
        h["instr_pct"] = (med([x["per_stmt"] for x in cg["pgsentinel"]]) - b) / b * 100
        h["instr_abs"] = med([x["per_stmt"] for x in cg["pgsentinel"]]) - b
        if cg.get("none+qid"):
            h["qid_pct"] = (med([x["per_stmt"] for x in cg["none+qid"]]) - b) / b * 100
        if cg.get("pg_wait_sampling"):
            h["pws_instr_pct"] = (med([x["per_stmt"] for x in cg["pg_wait_sampling"]]) - b) / b * 100
    for name, ref in CG_REFERENCE.items():
        if cg.get(name) and cg.get(ref):
            v, rv = med([x["per_stmt"] for x in cg[name]]), med([x["per_stmt"] for x in cg[ref]])
            h["instr_over_" + name] = (v - rv, (v - rv) / rv * 100)
    sel = res.get("tps", {}).get("select", {})
    base = med(sel.get("none", []))
    for c in ("pgs1s", "pgs100ms", "pgs10ms", "pws10ms", "pws1s"):
        if base and sel.get(c):
            h["tps_" + c] = med(sel[c]) / base
        if base and sel.get(c):
            h["tps_range_" + c] = (min(sel[c]) / base, max(sel[c]) / base)
    if base and sel.get("none"):
        h["tps_none_spread"] = (max(sel["none"]) - min(sel["none"])) / base
    cpt = res.get("cpu_per_tx", {}).get("select", {})
    cbase = med(cpt.get("none", []))
    for c in ("pgs1s", "pgs100ms", "pgs10ms", "pws10ms", "pws1s"):
        if cbase and cpt.get(c):
            h["cpu_tx_" + c] = med(cpt[c]) / cbase
    sh = res.get("shmem", {})
    if sh:
        per_row = (sh[110000]["size"] - sh[10000]["size"]) / 100000.0
        h["row_bytes"] = per_row
        h["row_bytes_text"] = per_row + sh[36000]["text_area_size"] / 36000.0
    rd = res.get("read", {})
    if rd.get("pgs") and rd.get("pws"):
        a = med(rd["pgs"]["times"].get("count", []))
        b = med(rd["pws"]["times"].get("count", []))
        h["read_ratio"] = a / b if a and b else None
        h["read_pgs_ms"] = a
        h["read_pws_ms"] = b
        h["lock_wait_us"] = rd["pgs"]["status_after"]["max_lock_wait_us"]
    return h


def add_summary(res):
    """Add to res the figures and prose its report and the saved run share."""
    h = headline(res)
    res["headline"] = h
    res["targets"] = targets(res, h)
    res["insight"] = insight(res)


def _verdict(ok):
    return "met" if ok else "**missed**"


def _sampler_targets(h):
    t = []
    v = _verdict
    if h.get("pgs10") and h.get("pws10"):
        ok = h["pgs10"] <= h["pws10"]
        t.append(("sampler CPU per sample, 100 active / 200 connected ≤ pg_wait_sampling's "
                  "(10 ms)", "pgsentinel %.1f µs vs pg_wait_sampling %.1f µs (%.2f×)" % (
                      h["pgs10"], h["pws10"], h["pgs10"] / h["pws10"]), v(ok)))
    if h.get("same_ratio"):
        t.append(("same, both samplers in one cluster over the same windows (10 ms)",
                  "pgsentinel %.1f µs vs pg_wait_sampling %.1f µs (median ratio %.2f×)" % (
                      h["same_pgs"], h["same_pws"], h["same_ratio"]),
                  v(h["same_ratio"] <= 1.0)))
    if h.get("pgs1") and h.get("pws1"):
        ok = h["pgs1"] <= h["pws1"]
        t.append(("same at 1 s", "pgsentinel %.1f µs vs pg_wait_sampling %.1f µs (%.2f×)" % (
            h["pgs1"], h["pws1"], h["pgs1"] / h["pws1"]), v(ok)))
    flat = []
    for p in ("10", "100", "1"):
        a, b = h.get("pgs" + p), h.get("pgs" + p + "full")
        if a and b:
            flat.append((p, a, b))
    if flat:
        ok = all(b <= a * 1.15 for _, a, b in flat)
        t.append(("flat as the ring fills (full ≤ 1.15 × fresh)", "; ".join(
            "%s: fresh %.1f → full %.1f µs" % ({"10": "10 ms", "100": "100 ms", "1": "1 s"}[p], a, b)
            for p, a, b in flat), v(ok)))
    return t


def _statement_targets(h):
    t = []
    v = _verdict
    if h.get("instr_over_pgss+pgsentinel"):
        d, pct = h["instr_over_pgss+pgsentinel"]
        extra = []
        if h.get("instr_over_pgss+pg_wait_sampling"):
            extra.append("pg_wait_sampling %+.1f (%+.3f %%)" % h["instr_over_pgss+pg_wait_sampling"])
        if h.get("instr_over_pgsentinel"):
            extra.append("without pg_stat_statements, over no extension + compute_query_id=on: "
                         "%+.1f (%+.3f %%)" % h["instr_over_pgsentinel"])
        if h.get("instr_over_placebo+qid"):
            extra.append("a placebo library moves %+.1f" % h["instr_over_placebo+qid"][0])
        if h.get("instr_pct") is not None:
            extra.append("over no extension at all %+.1f (%+.3f %%), of which query ids %+.3f %%" % (
                h["instr_abs"], h["instr_pct"], h.get("qid_pct", 0.0)))
        t.append(("hooks ≤ +0.05 % instructions per statement (over pg_stat_statements alone, "
                  "the issue's calibration)",
                  "%+.1f instructions, %+.3f %%; %s" % (d, pct, "; ".join(extra)),
                  v(pct <= 0.05)))
    elif h.get("instr_pct") is not None:
        t.append(("hooks ≤ +0.05 % instructions per statement",
                  "%+.1f instructions, %+.3f %%%s" % (
                      h["instr_abs"], h["instr_pct"],
                      " (query-id computation alone: %+.3f %%)" % h["qid_pct"]
                      if h.get("qid_pct") is not None else ""),
                  v(h["instr_pct"] <= 0.05)))
    noise = h.get("tps_none_spread")
    for c, lim in (("pgs1s", 0.01), ("pgs100ms", 0.02)):
        if h.get("tps_" + c):
            r = h["tps_" + c]
            ok = r >= 1 - lim
            verdict = v(ok)
            if noise is not None and noise > lim:
                verdict = ("inconclusive: the no-extension runs alone spread %.1f %% (> the "
                           "%d %% tolerance) on this shared machine; median ratio %s the "
                           "target" % (noise * 100, lim * 100, "meets" if ok else "misses"))
            t.append(("pgbench -S median TPS within %d %% of no extension at %s" % (
                lim * 100, CONFIGS[c][0]), "%.4f (%.2f %%)%s%s" % (
                    r, (r - 1) * 100, "; no-extension run spread %.1f %%" % (noise * 100)
                    if noise is not None else "",
                    "; server CPU per transaction %.4f× no extension" % h["cpu_tx_" + c]
                    if h.get("cpu_tx_" + c) else ""), verdict))
    return t


def _memory_read_targets(h):
    t = []
    v = _verdict
    if h.get("row_bytes_text"):
        t.append(("≤ 300 B shared memory per ASH row incl. text share",
                  "%.1f B (row %.1f B + 4 MB / 36000 rows)" % (h["row_bytes_text"], h["row_bytes"]),
                  v(h["row_bytes_text"] <= 300)))
    if h.get("read_ratio"):
        t.append(("full read of 100k rows ≤ 1.5 × pg_wait_sampling's",
                  "%.1f ms vs %.1f ms (%.2f×)" % (h["read_pgs_ms"], h["read_pws_ms"],
                                                  h["read_ratio"]),
                  v(h["read_ratio"] <= 1.5)))
    if h.get("lock_wait_us") is not None:
        t.append(("sampler lock wait < 10 ms", "max_lock_wait_us = %d" % h["lock_wait_us"],
                  v(h["lock_wait_us"] < 10000)))
    return t


def targets(res, h):
    """The targets of the issue: (target, measured, verdict) triples."""
    return _sampler_targets(h) + _statement_targets(h) + _memory_read_targets(h)


def _insight_breakdown(res, lines):
    """The cost per session kind, from the breakdown."""
    bd = res.get("breakdown", {})
    p = bd.get("pgs10ms")
    q = bd.get("pws10ms")
    if p and len(p) == 4:
        v = [m["us_per_sample"] for _, m in p]
        per_idle = (v[1] - v[0]) / 200.0
        per_sleep = (v[2] - v[1]) / 100.0
        per_lock = (v[3] - v[1]) / 100.0
        txt = ("Reading: pgsentinel's fixed cost per sample is about %.0f µs (no client "
               "sessions), %s, each active row %.2f µs, and each lock-waiting session %.1f µs "
               "(%.0f× an ordinary active row), so the 45 lock waiters of the metric-1 mix "
               "account for about %.0f µs of every sample." % (
                   v[0], "each connected session adds %.2f µs even when idle" % per_idle
                   if per_idle > 0.02 else "an idle connection costs nothing measurable (an "
                   "unchanged status entry is one load)",
                   per_sleep, per_lock,
                   per_lock / per_sleep if per_sleep > 0 else float("nan"), 45 * per_lock))
        if q and len(q) == 4:
            w_ = [m["us_per_sample"] for _, m in q]
            txt += (" pg_wait_sampling: %.0f µs fixed, %.2f µs per connected session, "
                    "%.2f µs per lock waiter (it reads PGPROC only and never looks up "
                    "blockers)." % (w_[0], (w_[1] - w_[0]) / 200.0, (w_[3] - w_[1]) / 100.0))
        txt += (" What an active row is made of (src/sample/sampler.c): one load of its status "
                "entry's change counter (the entry is read again only when it changed), its "
                "PGPROC (xid and xmin, pid, wait event: three cache lines) and its statement "
                "slot (nested statement, command type: one line), all fetched ahead while the "
                "sampler passes over the status slots, its texts referenced again without "
                "being read, and a 176-byte row written into the ring (three lines), where "
                "pg_wait_sampling reads the PGPROC and stores pid, wait event and query id. "
                "Both pay the same wake-up (epoll_wait and the context switch), which is most "
                "of the fixed cost and is dearer when the machine is idle (an idle virtual "
                "CPU is woken through the hypervisor).")
        lines.append(txt)


def _insight_profile(res, lines):
    """What the perf profile of the pgsentinel sampler says about it."""
    prof = res.get("profile", {}).get("pgs10ms", {})
    incl = {sym: c for c, sf, sym in prof.get("incl", [])}
    selfp = {sym: pct for pct, dso, sym in prof.get("self_", [])}
    if incl or selfp:
        parts = []
        for sym, what in (("pg_blocking_pids", "core's pg_blocking_pids() (now only the "
                           "fallback for lock groups and waiters that moved)"),
                          ("pgs_find_blockers", "the one-pass blocker lookup of all lock "
                           "waiters (src/sample/blockers.c)"),
                          ("pgstat_fetch_stat_numbackends", "core's backend-status snapshot "
                           "(pgstat_read_current_status copies every in-use entry, including "
                           "the 1 kB activity string — hence strcpy — and takes a lock per "
                           "entry for its xid)")):
            if sym in incl:
                parts.append("%.0f %% in %s" % (incl[sym], what))
        if "__strcpy_avx2" in selfp:
            parts.append("%.0f %% self in strcpy" % selfp["__strcpy_avx2"])
        if "pgs_text_batch_add" in selfp:
            parts.append("%.0f %% self in pgs_text_batch_add (text dedup)" %
                         selfp["pgs_text_batch_add"])
        if parts:
            lines.append("The perf profile below agrees: " + "; ".join(parts) + ".")


def _insight_conn1000(res, lines):
    """The cost per lock waiter at 1000 connections."""
    p = res.get("breakdown", {}).get("pgs10ms")
    c1 = res.get("conn1000", {})
    mx5 = res.get("mix500", {})
    if c1.get("pgs10ms") and p and len(p) == 4 and mx5:
        v = [m["us_per_sample"] for _, m in p]
        per_idle = (v[1] - v[0]) / 200.0
        per_sleep = (v[2] - v[1]) / 100.0
        nl = mx5["lock"]
        rest = v[0] + 1000 * per_idle + (mx5["sleep"] + mx5["cpu"]) * per_sleep
        per_lock_1000 = (c1["pgs10ms"]["us_per_sample"] - rest) / nl
        per_lock_45 = None
        m1 = [m["us_per_sample"] for m in res["metric1"].get("pgs10ms-full", [])]
        mx = res.get("mix100", {})
        if m1 and mx:
            per_lock_45 = (med(m1) - v[0] - 100 * per_idle -
                           (mx["sleep"] + mx["cpu"]) * per_sleep) / mx["lock"]
        lines.append("At 1000 connections with %d lock waiters the cost per sample is %.0f µs. "
                     "Taking the other sessions at the 200-connection rates, the cost per lock "
                     "waiter is about %s%.1f µs with 100 waiters queued on one row and %.0f µs "
                     "with %d. The lock manager is read once per awaited lock and sample "
                     "(src/sample/blockers.c), under its partition lock in shared mode: each waiter's "
                     "PROCLOCK and the lock's queue, pointer-chasing through shared memory. "
                     "Each waiter's blocking_pids lists every conflicting waiter ahead of it "
                     "(as pg_blocking_pids() does), n²/2 pids for n waiters, but the waiters "
                     "of one queue share one stored list of which each row shows its prefix, "
                     "so the work and the text stored grow with n." % (
                         nl, c1["pgs10ms"]["us_per_sample"],
                         "%.1f µs with %d waiters, " % (per_lock_45, mx["lock"])
                         if per_lock_45 is not None and per_lock_45 > 0 else "",
                         (v[3] - v[1]) / 100.0, per_lock_1000, nl))


def insight(res):
    """The reading of the sampler breakdown, its profile and the 1000-connection run."""
    lines = []
    _insight_breakdown(res, lines)
    _insight_profile(res, lines)
    _insight_conn1000(res, lines)
    return " ".join(lines)


def history_rows(current_file):
    rows = []
    d = os.path.join(BENCH_DIR, "runs")
    if not os.path.isdir(d):
        return rows
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".json"):
            continue
        try:
            r = json.load(open(os.path.join(d, fn)))
        except (OSError, ValueError):
            continue
        h = r.get("headline", {})

        def f(x, fmt):
            return fmt % x if isinstance(x, (int, float)) else "n/a"
        rows.append(dict(
            date="%s (`%s`)" % (r.get("date", fn), r.get("facts", {}).get("commit", "?")[:9]),
            sampler="%s / %s µs" % (f(h.get("pgs10"), "%.1f"), f(h.get("pws10"), "%.1f")),
            instr="%s %%" % f(h.get("instr_pct"), "%+.3f"),
            tps="%s / %s / %s" % (f(h.get("tps_pgs1s"), "%.4f"), f(h.get("tps_pgs100ms"), "%.4f"),
                                  f(h.get("tps_pgs10ms"), "%.4f")),
            read="%s×" % f(h.get("read_ratio"), "%.2f")))
    return rows


def _intro(w, res, facts, args):
    """Title, provenance, machine, settings and configurations."""
    quick = args.quick
    w("# pgsentinel overhead benchmark")
    w("")
    if quick:
        w("**Smoke run (`--quick`): durations and repetitions are too short for the "
          "figures to mean anything; run the full benchmark for real numbers.**")
        w("")
    w("Generated by `%s` on %s in %.1f minutes (source commit `%s`%s)." % (
        args.command.strip(), res["date"], res["total_secs"] / 60.0, facts.get("commit", "?")[:12],
        ", with %d locally modified source files" % facts["dirty_files"]
        if facts.get("dirty_files") else ""))
    w("")
    w("Machine: %s cores (%s), %s RAM, Debian %s, kernel %s, %s, pg_wait_sampling %s. "
      "Load average at start %s, at end %s. The machine is shared: other jobs ran "
      "during the benchmark, hence the min / median / max columns." % (
          facts["nproc"], facts["cpu"], facts["mem"], facts["os"], facts["kernel"],
          facts["pg"], facts["pws"], " ".join(res["load_start"]), " ".join(facts["loadavg"])))
    w("")
    loads = [m["load"] for ms in res["metric1"].values() for m in ms if "load" in m] + \
        res.get("tps_load", [])
    if loads:
        w("1-minute load average observed at the end of each sampler window and pgbench run: "
          "min %.1f, median %.1f, max %.1f (2 cores; our own benchmark accounts for ~2-4 of "
          "it during the session-mix windows)." % (min(loads), med(loads), max(loads)))
        w("")
    w("Server settings, the same for every configuration: %s Each configuration is a "
      "restart of the same throwaway cluster with only `shared_preload_libraries` and the "
      "extension's own settings changed." % BASE_SETTINGS_TEXT)
    w("")
    w("| configuration | shared_preload_libraries | extension settings |")
    w("|---|---|---|")
    for k, (label, pre, s, kind, period) in CONFIGS.items():
        w("| %s | %s | %s |" % (label, pre or "(none)",
                               ", ".join("%s=%s" % kv for kv in s.items()) or "defaults"))
    w("")
    w("pg_wait_sampling defaults: profile_period = history_period = 10 ms, history_size "
      "5000, profile_queries on. pgsentinel defaults: max_entries 36000, text_area_size 4 MB.")
    w("")


def _targets(w, res):
    """The targets table."""
    tg = res["targets"]
    w("## Targets: where we stand")
    w("")
    w("| target | measured | verdict |")
    w("|---|---|---|")
    for t in tg:
        w("| %s | %s | %s |" % t)
    w("")


def _metric1(w, res):
    """Metric 1: the sampler CPU per sample table."""
    m1 = res["metric1"]
    mx = res.get("mix100", {})
    w("## 1. Sampler CPU per sample")
    w("")
    w("Workload: %d active sessions (%d `pg_sleep`, %d CPU-bound PL/pgSQL loops, %d "
      "`UPDATE`s blocked behind one idle-in-transaction row-lock holder) plus %d idle "
      "connections (201 client connections, max_connections 250). CPU time of the sampling "
      "process = first field of `/proc/PID/schedstat` over a %s s window after %s s of "
      "warm-up; samples = `samples_taken` delta for pgsentinel; for pg_wait_sampling (its "
      "collector, backend_type `pg_wait_sampling collector`), which does not count its "
      "samples, the growth of sum(count) in pg_wait_sampling_profile divided by the items "
      "per sample seen in pg_wait_sampling_history (window / period when that fails). "
      "\"fresh\": `max_entries` %s, the ring does not wrap during the window; \"full\": "
      "`max_entries` %s (the minimum), wrapped before the window starts. %d interleaved "
      "rounds, configuration order rotated each round; min / median / max over rounds." % (
          sum(mx[k] for k in ("sleep", "cpu", "lock")) if mx else 100, mx.get("sleep", 0),
          mx.get("cpu", 0), mx.get("lock", 0), mx.get("idle", 100), res["params"]["window"],
          res["params"]["warm"], FRESH_ENTRIES, FULL_ENTRIES, res["params"]["rounds"]))
    w("")
    w("Ratio against \"no extension\" does not apply (it has no sampler). Ratios are against "
      "pg_wait_sampling's median at the same period (100 ms: against pg_wait_sampling 10 ms, "
      "per sample).")
    w("")
    w("| configuration | ring | µs CPU per sample (min / median / max) | CPU % of one core "
      "(median) | samples per window (nominal: window / period) | minor page faults per sample | wall µs of last sample "
      "| ratio to pg_wait_sampling |")
    w("|---|---|---|---|---|---|---|---|")
    pws_med = {p: med([m["us_per_sample"] for m in m1.get(k, [])])
               for p, k in ((0.01, "pws10ms"), (1.0, "pws1s"))}
    for key, cfg, extra, ring in sampler_variants():
        if key not in m1:
            continue
        ms = m1[key]
        period = CONFIGS[cfg][4]
        ref = pws_med.get(period, pws_med.get(0.01))
        ups = [m["us_per_sample"] for m in ms]
        w("| %s | %s | %s | %.2f | %.0f (%.0f) | %.1f | %s | %s |" % (
            CONFIGS[cfg][0], ring, mmm(ups), med([m["cpu_pct"] for m in ms]),
            med([m["samples"] for m in ms]),
            med([m.get("nominal_samples", m["samples"]) for m in ms]),
            med([m["faults_per_sample"] for m in ms]),
            "%d" % ms[-1]["last_sample_us"] if ms[-1].get("last_sample_us") is not None else "n/a",
            "—" if cfg.startswith("pws") else ratio(med(ups), ref, "%.2f×")))
    w("")
    rps = [m["rows_per_sample"] for k in ("pgs10ms-fresh", "pgs100ms-fresh", "pgs1s-fresh")
           for m in m1.get(k, []) if m.get("rows_per_sample")]
    if rps:
        w("Rows per pgsentinel sample in the fresh runs: median %.1f (expected %d: the "
          "active sessions; the holder is idle in transaction and not sampled)." %
          (med(rps), sum(mx[k] for k in ("sleep", "cpu", "lock"))))
        w("")
    ov = [(k, m["sample_overruns"]) for k, ms in m1.items() for m in ms
          if m.get("sample_overruns")]
    if ov:
        w("Sample overruns (a sample later than one period) reported by pgsentinel: " +
          ", ".join("%s %d" % o for o in ov) + ".")
        w("")


def _same_cluster(w, res):
    """Both samplers in one cluster over the same windows."""
    sc = res.get("same_cluster", [])
    if sc:
        w("### Both samplers in one cluster, the same windows")
        w("")
        w("pgsentinel 10 ms (ring full) and pg_wait_sampling 10 ms loaded together "
          "(`shared_preload_libraries = 'pgsentinel,pg_wait_sampling'`), the same metric-1 "
          "workload, each sampler's CPU per sample read over the very same %d windows of "
          "%s s: whatever else runs on the machine during a window weighs on both figures "
          "of that window alike, so their ratio is the steadiest comparison of this "
          "report (the separate configurations above run minutes apart, each in its own "
          "cluster)." %
          (len(sc), res["params"].get("same_window")))
        w("")
        w("| window | pgsentinel µs/sample | pg_wait_sampling µs/sample | ratio | 1-min load |")
        w("|---|---|---|---|---|")
        for i, m in enumerate(sc):
            w("| %d | %.1f | %.1f | %.2f× | %.1f |" % (
                i + 1, m["pgs"]["us_per_sample"], m["pws"]["us_per_sample"],
                m["pgs"]["us_per_sample"] / max(m["pws"]["us_per_sample"], 1e-9),
                m["pgs"]["load"]))
        rs = [m["pgs"]["us_per_sample"] / max(m["pws"]["us_per_sample"], 1e-9) for m in sc]
        w("| min / median / max | %s | %s | %s | |" % (
            mmm([m["pgs"]["us_per_sample"] for m in sc]),
            mmm([m["pws"]["us_per_sample"] for m in sc]), mmm(rs, "%.2f×")))
        w("")


def _breakdown(w, res):
    """Where the sampler's time goes, and the reading of it."""
    bd = res.get("breakdown", {})
    if bd:
        w("### Where the sampler's time goes")
        w("")
        w("Same cluster, one workload after the other, 10 ms period, %s s windows, "
          "pgsentinel with the ring full (steady state). The differences give the cost per "
          "connected session, per active row, and per lock-waiter row." % res["params"]["bd_window"])
        w("")
        names = [n for n, _ in next(iter(bd.values()))]
        w("| workload | " + " | ".join("%s µs/sample (page faults/sample)" % CONFIGS[c][0]
                                       for c in bd) + " |")
        w("|---|" + "---|" * len(bd))
        for i, n in enumerate(names):
            w("| %s | %s |" % (n, " | ".join("%.1f (%.1f)" % (bd[c][i][1]["us_per_sample"],
                                                             bd[c][i][1]["faults_per_sample"])
                                             for c in bd)))
        w("")
        for c in bd:
            v = [m["us_per_sample"] for _, m in bd[c]]
            if len(v) == 4:
                w("- %s: base %.1f µs; +%.3f µs per idle connection; +%.2f µs per "
                  "sleeping active session; +%.2f µs per lock-waiting session." % (
                      CONFIGS[c][0], v[0], (v[1] - v[0]) / 200.0, (v[2] - v[1]) / 100.0,
                      (v[3] - v[1]) / 100.0))
        w("")
        w(res.get("insight", ""))
        w("")


def _profile(w, res):
    """The perf profiles of the sampling processes."""
    prof = res.get("profile", {})
    if prof.get("note"):
        w(prof["note"])
        w("")
    for cfg in ("pgs10ms", "pws10ms"):
        pr = prof.get(cfg)
        if not pr:
            continue
        w("**Profile of the %s sampling process** (perf, software cpu-clock event at ~5 kHz, "
          "%s s, metric-1 workload, ring full): self time by function (≥ 0.7 %%), then "
          "inclusive time (≥ 3 %%)." % (CONFIGS[cfg][0], pr["secs"]))
        w("")
        w("| self % | object | function |")
        w("|---|---|---|")
        for pct, dso, sym in pr["self_"]:
            w("| %.1f | %s | %s |" % (pct, dso, sym))
        w("")
        if pr.get("incl"):
            w("<details><summary>inclusive</summary>")
            w("")
            w("| children % | self % | function |")
            w("|---|---|---|")
            for c, sf, sym in pr["incl"]:
                w("| %.1f | %.1f | %s |" % (c, sf, sym))
            w("")
            w("</details>")
            w("")


def _conn1000(w, res):
    """The 1000-connection runs."""
    m1 = res["metric1"]
    c1 = res.get("conn1000", {})
    if c1:
        mx5 = res.get("mix500", {})
        w("### 1000 connections (max_connections 1100), 500 active")
        w("")
        w("%d pg_sleep, %d CPU loops, %d lock waiters, %d idle; pgsentinel with the ring full "
          "(max_entries %s); one run each, %s s window. Growth = this / the 200-connection "
          "full-ring median (pg_wait_sampling: / its 200-connection median)." % (
              mx5.get("sleep", 0), mx5.get("cpu", 0), mx5.get("lock", 0), mx5.get("idle", 0),
              FULL_ENTRIES, res["params"]["c1000_window"]))
        w("")
        w("| configuration | µs CPU per sample | CPU % of one core | growth vs 200 connections "
          "| ratio to pg_wait_sampling (same period) |")
        w("|---|---|---|---|---|")
        p1000 = {0.01: c1.get("pws10ms", {}).get("us_per_sample"),
                 1.0: c1.get("pws1s", {}).get("us_per_sample")}
        for cfg, m in c1.items():
            period = CONFIGS[cfg][4]
            base_key = cfg + "-full" if cfg.startswith("pgs") else cfg
            base = med([x["us_per_sample"] for x in m1.get(base_key, [])])
            w("| %s | %.1f | %.2f | %s | %s |" % (
                CONFIGS[cfg][0], m["us_per_sample"], m["cpu_pct"], ratio(m["us_per_sample"], base, "%.2f×"),
                "—" if cfg.startswith("pws") else
                ratio(m["us_per_sample"], p1000.get(period, p1000.get(0.01)), "%.2f×")))
        w("")


def _metric2_tps(w, res):
    """Metric 2: pgbench TPS and server CPU per transaction."""
    w("## 2. Hook cost on every statement")
    w("")
    tps = res.get("tps", {})
    if tps:
        w("pgbench, scale 10, 4 clients, 2 threads, simple protocol, %s s per test, %d "
          "rounds; configuration order rotated each round, -S / TPC-B order alternated; "
          "tables prewarmed (pg_prewarm) after each start. Ratios use medians." % (
              res["params"]["tps_secs"], res["params"]["rounds"]))
        w("")
        w("A paired design was tried to get under this noise (two copies of the cluster "
          "running pgbench -S, 2 clients each, at the same time, one with no extension and "
          "one with the configuration under test, roles swapped every round): its control, "
          "no extension against itself, still spread from 0.96 to 1.05 over 4 rounds of "
          "8 s (2026-11-23, 2 shared cores), no better than the sequential runs, so it was "
          "not kept. The instruction counts below are the repeatable figure.")
        w("")
        for test, title in (("select", "pgbench -S (select only)"), ("tpcb", "pgbench TPC-B")):
            d = tps.get(test, {})
            if not d:
                continue
            base = med(d.get("none", []))
            pws = med(d.get("pws10ms", []))
            w("**%s**" % title)
            w("")
            w("| configuration | TPS min / median / max | spread (max-min)/median | ratio to no "
              "extension | ratio to pg_wait_sampling 10 ms |")
            w("|---|---|---|---|---|")
            for cfg in TPS_CONFIGS:
                if cfg not in d:
                    continue
                xs = d[cfg]
                w("| %s | %s | %.1f %% | %s | %s |" % (
                    CONFIGS[cfg][0], mmm(xs, "%.0f"),
                    (max(xs) - min(xs)) / med(xs) * 100, ratio(med(xs), base, "%.4f"),
                    ratio(med(xs), pws, "%.4f")))
            w("")
        cpt = res.get("cpu_per_tx", {})
        if cpt:
            w("**Server CPU per transaction** (less sensitive to the other jobs on the machine "
              "than TPS: CPU time of the postmaster's reaped children — the backends that served "
              "the run, plus autovacuum — and of the live sampler, from /proc, divided by the "
              "transactions pgbench reports; µs, min / median / max over rounds).")
            w("")
            w("| configuration | -S µs/tx | ratio to no extension | TPC-B µs/tx | ratio to no "
              "extension |")
            w("|---|---|---|---|---|")
            bs = med(cpt.get("select", {}).get("none", []))
            bt = med(cpt.get("tpcb", {}).get("none", []))
            for cfg in TPS_CONFIGS:
                a = cpt.get("select", {}).get(cfg, [])
                b = cpt.get("tpcb", {}).get(cfg, [])
                if not a and not b:
                    continue
                w("| %s | %s | %s | %s | %s |" % (
                    CONFIGS[cfg][0], mmm(a, "%.1f"), ratio(med(a), bs, "%.4f"),
                    mmm(b, "%.1f"), ratio(med(b), bt, "%.4f")))
            w("")


def _callgrind(w, res):
    """Metric 2: instructions per statement."""
    cg = res.get("callgrind", {})
    if cg:
        n = res.get("callgrind_n")
        w("**Instructions per statement** (callgrind, `postgres --single` with %d and %d "
          "copies of `SELECT abalance FROM pgbench_accounts WHERE aid = <fixed pseudo-random "
          "aid>;`, instructions = (I(2N) − I(N)) / N so start-up cost cancels; the bgworkers "
          "do not run in single-user mode, the hooks do). \"no extension + compute_query_id=on\" "
          "isolates the query-id computation that pgsentinel switches on (EnableQueryId) and "
          "pg_wait_sampling does not. Repetitions: %d." % (n, 2 * n, len(cg.get("none", []))))
        w("")
        w("Each configuration is also compared with the one it adds to (\"compared with\"): "
          "pgsentinel with query ids on and no extension, the placebo library likewise (what "
          "loading any library moves), and each extension with pg_stat_statements alone, as "
          "the issue calibrates its target.")
        w("")
        w("| configuration | instructions / statement (runs) | Δ vs no extension | Δ % | "
          "compared with | Δ | Δ % |")
        w("|---|---|---|---|---|---|---|")
        base = med([x["per_stmt"] for x in cg.get("none", [])])
        for name, _, _, label in CG_CONFIGS:
            if name not in cg:
                continue
            v = med([x["per_stmt"] for x in cg[name]])
            ref = CG_REFERENCE.get(name)
            rv = med([x["per_stmt"] for x in cg.get(ref, [])]) if ref else None
            w("| %s | %.1f (%s) | %+.1f | %+.3f %% | %s | %s | %s |" % (
                label, v, ", ".join("%.1f" % x["per_stmt"] for x in cg[name]),
                v - base, (v - base) / base * 100,
                CG_LABELS[ref] if rv else "—",
                "%+.1f" % (v - rv) if rv else "—",
                "%+.3f %%" % ((v - rv) / rv * 100) if rv else "—"))
        w("")


def _callgrind_parts(w, res):
    """Metric 2: where the instructions go."""
    parts = res.get("callgrind_parts", {})
    if parts:
        w("Where the difference goes (callgrind_annotate on the same runs, per statement): "
          "self instructions of the extension library's functions, and inclusive instructions "
          "of core's `JumbleQuery` (query-id computation).")
        w("")
        w("| configuration | JumbleQuery (incl.) | extension library (self) | top extension "
          "functions (self) |")
        w("|---|---|---|---|")
        for name, _, _, label in CG_CONFIGS:
            d = parts.get(name)
            if not d:
                continue
            lib = sum(v for k, v in d.items() if k.startswith("self:"))
            fns = sorted(((v, k[3:]) for k, v in d.items() if k.startswith("fn:") and v > 0.5),
                         reverse=True)[:6]
            w("| %s | %.1f | %.1f | %s |" % (
                label, d.get("incl:JumbleQuery", 0.0), lib,
                ", ".join("%s %.1f" % (f, v) for v, f in fns) or "—"))
        w("")


def _memory(w, res):
    """Metric 3: shared memory per row, worker RSS."""
    m1 = res["metric1"]
    sh = res.get("shmem", {})
    w("## 3. Memory")
    w("")
    if sh:
        a, b = sh[10000], sh[110000]
        per_row = (b["size"] - a["size"]) / 100000.0
        d = sh[36000]
        text_share = d["text_area_size"] / 36000.0
        w("| measure | value |")
        w("|---|---|")
        w("| `pg_shmem_allocations` 'pgsentinel', max_entries 10000 | %d B |" % a["size"])
        w("| `pg_shmem_allocations` 'pgsentinel', max_entries 110000 | %d B |" % b["size"])
        w("| bytes per ASH row = Δsize / Δrows | %.1f B (pgsentinel_status().ash_row_bytes = %s) |"
          % (per_row, a["ash_row_bytes"]))
        w("| default total (max_entries 36000, text_area_size 4 MB, max_connections 250) | %d B "
          "(%.1f MiB) |" % (d["size"], d["size"] / 1048576.0))
        w("| everything else: header, backend slots, statements-history ring (total − rows − "
          "text area) | %d B |" % (
            d["size"] - per_row * 36000 - d["text_area_size"]))
        w("| bytes per row including the text-area share at defaults (row + 4 MB / 36000) | "
          "%.1f B |" % (per_row + text_share))
        w("| bytes per row including text share and backend slots at defaults (total / 36000) | "
          "%.1f B |" % (d["size"] / 36000.0))
        tu = [(m["text_area_used"], m["ash_rows"]) for m in m1.get("pgs10ms-fresh", [])
              if m.get("ash_rows")]
        if tu:
            w("| text bytes actually used per row, metric-1 workload (text_area_used / ash_rows, "
              "pgsentinel 10 ms fresh) | %s |" % ", ".join(
                  "%.1f (%d / %d)" % (u / r, u, r) for u, r in tu))
        rss = [(k, ms[-1]["rss"]) for k, ms in m1.items() if k.startswith("pgs")]
        for k, r in rss:
            w("| worker RSS after the metric-1 run %s | VmRSS %d kB (RssAnon %d kB, RssShmem %d "
              "kB, RssFile %d kB) |" % (k, r.get("VmRSS", 0), r.get("RssAnon", 0),
                                        r.get("RssShmem", 0), r.get("RssFile", 0)))
        rr = res.get("read", {}).get("pgs", {}).get("rss")
        if rr:
            w("| worker RSS after the 100k-row read test | VmRSS %d kB (RssAnon %d kB, RssShmem "
              "%d kB) |" % (rr.get("VmRSS", 0), rr.get("RssAnon", 0), rr.get("RssShmem", 0)))
        for k in ("pws10ms",):
            if k in m1:
                r = m1[k][-1]["rss"]
                w("| pg_wait_sampling collector RSS (comparison) | VmRSS %d kB (RssAnon %d kB, "
                  "RssShmem %d kB) |" % (r.get("VmRSS", 0), r.get("RssAnon", 0),
                                         r.get("RssShmem", 0)))
        w("")
        w("RssShmem counts the shared pages the worker has touched (the ring it writes), "
          "not private memory.")
        w("")


def _read_cost(w, res):
    """Metric 4: read cost of the history views, sampler lock wait."""
    rd = res.get("read", {})
    w("## 4. Read cost")
    w("")
    if rd:
        p, q = rd.get("pgs", {}), rd.get("pws", {})
        w("pgsentinel: max_entries %s, sampling 10 ms; pg_wait_sampling: history_size %s, "
          "history_period 10 ms; both filled by the metric-1 session mix (rows reached: %s and "
          "%s, in %.0f s and %.0f s). Before the reads the CPU-bound loops are ended (they "
          "would starve the reader on 2 cores); sleepers and lock waiters stay, so sampling goes "
          "on during the reads. psql `\\timing`, the three queries interleaved, 5 times, in one "
          "session (the first run includes loading the library into the session)." % (res["params"]["read_rows"], res["params"]["read_rows"], p.get("rows"),
                         q.get("rows"), p.get("fill_s", 0), q.get("fill_s", 0)))
        w("")
        w("| query | pgsentinel best / median ms | pg_wait_sampling best / median ms | ratio "
          "(median) |")
        w("|---|---|---|---|")
        for qn, title in (("count", "count(*) (full read)"),
                          ("group", "GROUP BY wait event"),
                          ("select_all", "SELECT * to the client (psql -o /dev/null)")):
            a = p.get("times", {}).get(qn, [])
            b = q.get("times", {}).get(qn, [])
            w("| %s | %s | %s | %s |" % (
                title, "%.1f / %.1f" % (min(a), med(a)) if a else "n/a",
                "%.1f / %.1f" % (min(b), med(b)) if b else "n/a",
                ratio(med(a), med(b), "%.2f×")))
        w("")
        if p.get("status_before"):
            sb, sa = p["status_before"], p["status_after"]
            w("pgsentinel_status().max_lock_wait_us: %d before the reads, %d after (longest "
              "wait of the sampler for its lock since start); max_sample_us %d; "
              "sample_overruns %d." % (sb["max_lock_wait_us"], sa["max_lock_wait_us"],
                                       sa["max_sample_us"], sa["sample_overruns"] or 0))
            w("")
            if p.get("rows_check"):
                c = p["rows_check"].split("|")
                w("Ring content check: %s rows in %s samples, %s rows with NULL pid or "
                  "ash_time." % (c[0], c[1], c[2]))
                w("")


def _pgssh(w, res):
    """Metric 5: the statements history sampling cost."""
    w("## 5. Statements sampling cost (pg_stat_statements history)")
    w("")
    ps = res.get("pgssh", [])
    if ps:
        w("pg_stat_statements and pgsentinel preloaded, `pgsentinel_ash.sampling_period` "
          "100 ms, pg_stat_statements.max 10000; pg_stat_statements reset, then N SQL "
          "functions each called once (N entries), then ten sleeping sessions, so that every "
          "sample asks for their statement. CPU time of the statements worker (its "
          "/proc/PID/schedstat) over a %.0f s window divided by the readings it made. Each "
          "reading calls `pg_stat_statements(false)` once (no query texts), which builds "
          "every entry: the cost grows with the entries, not with what is kept. After each "
          "reading the worker rests nine times as long as it took (src/statements/pgssh_worker.c), so it "
          "never takes more than a tenth of a core: the last line samples every 10 ms, faster "
          "than such readings can follow, and the samples in between are merged into the next "
          "reading. pg_wait_sampling has no equivalent." % ps[0]["window"])
        w("")
        w("| pg_stat_statements entries | sampling period | readings (samples) | statements "
          "worker µs CPU per reading | its CPU % of one core, measured | wall µs of the last "
          "reading |")
        w("|---|---|---|---|---|---|")
        for m in ps:
            w("| %d | %s | %d (%d) | %.0f | %s | %d |" % (
                m["pgss_entries"], "%g ms" % (m.get("period", 0.1) * 1000), m["readings"],
                m.get("samples_per_window", m["window"] / 0.1), m["us_per_reading"],
                "%.2f" % m["cpu_pct"] if "cpu_pct" in m else "—", m["last_us"]))
        w("")
    else:
        w("Not measured in this run (`--only` without `metric 5`).")
    w("")


def _checks(w, res):
    """Correctness checks and server log issues."""
    w("## Correctness checks made along the way")
    w("")
    if res["checks"]:
        w("Problems in the sampled rows (last complete sample vs the known workload):")
        w("")
        for c in res["checks"][:50]:
            w("- " + c)
    else:
        w("In every pgsentinel 10 ms metric-1 run the last complete sample had exactly one row "
          "per active session: sleepers as Timeout/PgSleep, CPU loops as CPU, lock waiters as "
          "Lock with blockers and blockerpid set, every row with a queryid and query text, "
          "idle sessions and the idle-in-transaction holder not sampled.")
    w("")
    if res.get("log_issues"):
        w("Server log lines worth a look (ERROR/WARNING/crash), first %d:" %
          min(30, len(res["log_issues"])))
        w("")
        w("```")
        for l in res["log_issues"][:30]:
            w(l)
        w("```")
    else:
        w("No crash, PANIC, ERROR or WARNING in the server logs (apart from the expected "
          "pgsentinel warning that pg_stat_statements is not preloaded, and workers' exit "
          "code 1 at fast shutdown).")
    w("")


def _history(w, history):
    """The run-to-run table of bench/runs/."""
    if history:
        w("## Run-to-run noise (full runs saved in bench/runs/, not committed)")
        w("")
        w("Runs on different source commits also differ by the code changes between them.")
        w("")
        w("| run (commit measured) | sampler µs/sample pgs 10 ms fresh / pws 10 ms | instr/stmt "
          "Δ % | -S TPS ratio 1 s / 100 ms / 10 ms | read ratio |")
        w("|---|---|---|---|---|")
        for h in history:
            w("| %s | %s | %s | %s | %s |" % (h["date"], h["sampler"], h["instr"], h["tps"],
                                              h["read"]))
        w("")


def _method_notes(w, res):
    """Command, clusters, step durations, configuration orders."""
    w("## Method notes")
    w("")
    w("- Command: `%s` (full) or `bench/run.sh --quick` (smoke). It installs the Debian "
      "packages it needs when root, builds pgsentinel from the checkout in bench/work/src and "
      "installs it into a private relocated copy of the PostgreSQL 15 tree (bench/work/inst), "
      "so concurrent `make install`s elsewhere do not change what is measured." %
      "bench/run.sh")
    w("- Clusters: one throwaway data directory under /tmp, run as user `pgsentinel_bench`, "
      "Unix socket only, own port and socket directory, removed at exit.")
    w("- Step durations (s): %s." % ", ".join("%s %s" % kv for kv in res["step_secs"].items()))
    w("- Configuration order per round: %s." % "; ".join(
        "%s: %s" % (k, " | ".join(",".join(o) for o in v)) for k, v in res["order"].items()))
    w("")


def write_report(res, facts, args, path, history):
    """Write the Markdown report of results res to path."""
    L = []
    w = L.append
    _intro(w, res, facts, args)
    _targets(w, res)
    _metric1(w, res)
    _same_cluster(w, res)
    _breakdown(w, res)
    _profile(w, res)
    _conn1000(w, res)
    _metric2_tps(w, res)
    _callgrind(w, res)
    _callgrind_parts(w, res)
    _memory(w, res)
    _read_cost(w, res)
    _pgssh(w, res)
    _checks(w, res)
    _history(w, history)
    _method_notes(w, res)
    with open(path, "w") as f:
        f.write("\n".join(L))
