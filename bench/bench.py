#!/usr/bin/env python3
"""pgsentinel overhead benchmark driver (stdlib only).

Started by bench/run.sh, which builds pgsentinel into a private copy of the
PostgreSQL 15 installation and passes --pg-bin.  Everything runs on one
throwaway cluster under /tmp (own port, own socket directory), restarted
with a different configuration for every measurement; every process and the
cluster are stopped, and the directory removed, on exit.

Metrics (see bench/REPORT.md for the results and the method):
  1. sampler CPU per sample (/proc/PID/schedstat) under a fixed session mix
  2. per-statement hook cost: pgbench TPS (interleaved rounds) and
     instructions per statement under callgrind in single-user mode
  3. shared memory per ASH row, text bytes per row, worker RSS
  4. read cost of the history views, sampler lock wait during reads
  5. statements history sampling cost: pending
"""

import argparse
import datetime
import json
import os
import platform
import pwd
import random
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import report_writer
from configs import (BASE_SETTINGS, CG_CONFIGS, CONFIGS, FULL_ENTRIES, PGSSH_ENTRIES,
                     TPS_CONFIGS, sampler_variants)

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
DB = "bench"
ROLE = "bench"


# --------------------------------------------------------------------------
# process bookkeeping and cleanup

CHILDREN = []          # Popen objects we started (own process groups)
CLUSTER = None         # the running Cluster, if any
CONNS = []             # open wire-protocol connections
TMP_ROOT = None
KEEP_TMP = False


def log(msg):
    sys.stderr.write("[bench %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def close_conns():
    while CONNS:
        c = CONNS.pop()
        c.close()


def cleanup():
    close_conns()
    for p in list(CHILDREN):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
    if CLUSTER is not None:
        CLUSTER.stop(force=True)
    if TMP_ROOT and not KEEP_TMP and os.path.isdir(TMP_ROOT):
        shutil.rmtree(TMP_ROOT, ignore_errors=True)


def on_signal(signum, frame):
    raise SystemExit(128 + signum)


# --------------------------------------------------------------------------
# running commands

class Runner:
    def __init__(self, pg_bin, run_as):
        self.pg_bin = os.path.abspath(pg_bin)
        self.run_as = run_as or None

    def wrap(self, argv):
        if self.run_as:
            return ["runuser", "-u", self.run_as, "--"] + argv
        return argv

    def run(self, argv, as_user=True, timeout=600, stdin=None, check=True,
            capture=True):
        cmd = self.wrap(argv) if as_user else argv
        p = subprocess.Popen(cmd, stdin=stdin or subprocess.DEVNULL,
                             stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                             stderr=subprocess.PIPE, cwd="/tmp",
                             start_new_session=True)
        CHILDREN.append(p)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise RuntimeError("timeout after %ss: %s" % (timeout, " ".join(argv)))
        finally:
            CHILDREN.remove(p)
        out = (out or b"").decode(errors="replace")
        err = (err or b"").decode(errors="replace")
        if check and p.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), p.returncode,
                                                     err.strip()[-2000:]))
        return out, err, p.returncode

    def bin(self, name):
        return os.path.join(self.pg_bin, name)


# --------------------------------------------------------------------------
# minimal PostgreSQL wire-protocol client (trust auth over a Unix socket):
# lets one Python process hold 1000 sessions without 1000 psql processes.

class PgConn:
    def __init__(self, sockpath, appname, timeout=60):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(sockpath)
        self.buf = b""
        params = b""
        for k, v in (("user", ROLE), ("database", DB), ("application_name", appname)):
            params += k.encode() + b"\0" + v.encode() + b"\0"
        params += b"\0"
        self.s.sendall(struct.pack("!ii", len(params) + 8, 196608) + params)
        self.wait_ready(startup=True)

    def _recv(self):
        d = self.s.recv(65536)
        if not d:
            raise ConnectionError("server closed the connection")
        self.buf += d

    def _msg(self):
        while len(self.buf) < 5:
            self._recv()
        t = self.buf[0:1]
        ln = struct.unpack("!i", self.buf[1:5])[0]
        while len(self.buf) < 1 + ln:
            self._recv()
        body = self.buf[5:1 + ln]
        self.buf = self.buf[1 + ln:]
        return t, body

    def wait_ready(self, startup=False):
        err = None
        while True:
            t, body = self._msg()
            if t == b"R":
                code = struct.unpack("!i", body[:4])[0]
                if code != 0:
                    raise RuntimeError("auth method %d unsupported (trust expected)" % code)
            elif t == b"E":
                err = body.replace(b"\0", b" ").decode(errors="replace")
                if startup:
                    raise RuntimeError("connection refused: " + err)
            elif t == b"Z":
                if err:
                    raise RuntimeError(err)
                return

    def send(self, sql):
        q = sql.encode() + b"\0"
        self.s.sendall(b"Q" + struct.pack("!i", len(q) + 4) + q)

    def query(self, sql):
        self.send(sql)
        self.wait_ready()

    def fetch(self, sql):
        """Rows of a simple query, as lists of str (None for NULL)."""
        self.send(sql)
        rows, err = [], None
        while True:
            t, body = self._msg()
            if t == b"D":
                n = struct.unpack("!h", body[:2])[0]
                pos, row = 2, []
                for _ in range(n):
                    ln = struct.unpack("!i", body[pos:pos + 4])[0]
                    pos += 4
                    if ln < 0:
                        row.append(None)
                    else:
                        row.append(body[pos:pos + ln].decode(errors="replace"))
                        pos += ln
                rows.append(row)
            elif t == b"E":
                err = body.replace(b"\0", b" ").decode(errors="replace")
            elif t == b"Z":
                if err:
                    raise RuntimeError(err)
                return rows

    def close(self):
        try:
            self.s.sendall(b"X\0\0\0\4")
        except OSError:
            pass
        try:
            self.s.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# the throwaway cluster

class Cluster:
    def __init__(self, runner, root, port):
        self.r = runner
        self.root = root
        self.data = os.path.join(root, "data")
        self.sock = os.path.join(root, "sock")
        self.logdir = os.path.join(root, "log")
        self.port = port
        self.running = False
        self.logfile = None
        self.log_issues = []
        self.label = ""

    def sockpath(self):
        return os.path.join(self.sock, ".s.PGSQL.%d" % self.port)

    def initdb(self):
        self.r.run([self.r.bin("initdb"), "-D", self.data, "-U", ROLE, "-A", "trust",
                    "-E", "UTF8", "--locale=C", "--no-sync"], timeout=300)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\n# pgsentinel bench\n")
            for k, v in BASE_SETTINGS.items():
                f.write("%s = %s\n" % (k, v))
            f.write("port = %d\n" % self.port)
            f.write("unix_socket_directories = '%s'\n" % self.sock)
            f.write("include_if_exists = 'bench_config.conf'\n")

    def write_config(self, preload, extra):
        path = os.path.join(self.data, "bench_config.conf")
        with open(path, "w") as f:
            f.write("shared_preload_libraries = '%s'\n" % preload)
            for k, v in extra.items():
                f.write("%s = '%s'\n" % (k, v))
        if self.r.run_as:
            pw = pwd.getpwnam(self.r.run_as)
            os.chown(path, pw.pw_uid, pw.pw_gid)

    def start(self, preload, extra, label):
        global CLUSTER
        self.write_config(preload, extra)
        self.label = label
        self.logfile = os.path.join(self.logdir, "%s-%d.log" % (re.sub(r"\W+", "_", label),
                                                                int(time.time() * 1000)))
        self.r.run([self.r.bin("pg_ctl"), "-D", self.data, "-l", self.logfile, "-w",
                    "-t", "120", "start"], timeout=150, capture=False)
        self.running = True
        CLUSTER = self
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                self.psql("SELECT 1", db="postgres")
                break
            except RuntimeError:
                time.sleep(0.3)

    def stop(self, force=False):
        global CLUSTER
        self.mon_close()
        if not self.running:
            return
        try:
            self.r.run([self.r.bin("pg_ctl"), "-D", self.data, "-m",
                        "immediate" if force else "fast", "-w", "-t", "60", "stop"],
                       timeout=90, capture=False)
        except Exception as e:  # fall back to the postmaster's pid
            log("pg_ctl stop failed (%s); signalling the postmaster" % e)
            try:
                with open(os.path.join(self.data, "postmaster.pid")) as f:
                    pid = int(f.readline().strip())
                os.kill(pid, signal.SIGQUIT)
                time.sleep(3)
            except (OSError, ValueError):
                pass
        self.running = False
        CLUSTER = None
        self.scan_log()

    def scan_log(self):
        if not self.logfile or not os.path.exists(self.logfile):
            return
        pat = re.compile(r"PANIC|TRAP|terminated by signal|exited with exit code|"
                         r"was terminated|segmentation|ERROR|WARNING")
        skip = re.compile(r"terminating connection due to administrator command|"
                          r"exited with exit code 1|is not a PostgreSQL backend process|"
                          r"pg_stat_statements is not in shared_preload_libraries|"
                          r"canceling statement due to user request")
        with open(self.logfile, errors="replace") as f:
            for line in f:
                if pat.search(line) and not skip.search(line):
                    self.log_issues.append("[%s] %s" % (self.label, line.strip()[:300]))

    def psql(self, sql, timeout=300, db=DB):
        argv = ["psql", "-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1",
                "-h", self.sock, "-p", str(self.port), "-U", ROLE, "-d", db, "-c", sql]
        out, err, rc = self.r.run(argv, as_user=False, timeout=timeout, check=False)
        if rc != 0:
            raise RuntimeError("psql: %s\n  in: %s" % (err.strip(), sql[:200]))
        return out.strip()

    def psql_script(self, script, timeout=600):
        argv = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-o", "/dev/null",
                "-h", self.sock, "-p", str(self.port), "-U", ROLE, "-d", DB]
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd="/tmp", start_new_session=True)
        CHILDREN.append(p)
        try:
            out, err = p.communicate(script.encode(), timeout=timeout)
        finally:
            CHILDREN.remove(p)
        if p.returncode != 0:
            raise RuntimeError("psql script: %s" % err.decode(errors="replace"))
        return out.decode(errors="replace")

    def row(self, sql):
        out = self.psql(sql)
        return out.split("|") if out else []

    def mon(self):
        """A persistent connection for the measurements, so that reading a
        counter does not cost a psql start-up (seconds on a loaded box)."""
        if getattr(self, "_mon", None) is None:
            self._mon = PgConn(self.sockpath(), "monitor_conn")
        return self._mon

    def mon_close(self):
        if getattr(self, "_mon", None) is not None:
            self._mon.close()
            self._mon = None

    def pgs_status(self):
        cols = ["worker_pid", "samples_taken", "last_sample_us", "max_sample_us",
                "max_lock_wait_us", "ash_rows", "ash_capacity", "text_area_used",
                "text_area_size", "ash_row_bytes", "shmem_bytes", "sample_overruns",
                "texts_dropped"]
        vals = self.mon().fetch("SELECT %s FROM pgsentinel_status()" % ", ".join(cols))[0]
        return {c: (int(v) if v is not None else None) for c, v in zip(cols, vals)}

    def sampler_pid(self, kind):
        if kind == "pgs":
            return self.pgs_status()["worker_pid"]
        rows = self.mon().fetch("SELECT pid FROM pg_stat_activity "
                                "WHERE backend_type = 'pg_wait_sampling collector'")
        return int(rows[0][0]) if rows else None

    def wait_sampler(self, kind, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                pid = self.sampler_pid(kind)
                if pid:
                    return pid
            except (RuntimeError, OSError):
                self.mon_close()
            time.sleep(0.2)
        raise RuntimeError("sampler process (%s) not found" % kind)


def loadavg1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def clean_sym(sym):
    return re.sub(r"\s+-\s+-\s*$", "", sym).strip()


def annotate_parts(runner, outfile):
    """Self instructions of pgsentinel.so / pg_wait_sampling.so functions and
    inclusive instructions of JumbleQuery, from one callgrind output file."""
    res = {}
    for inclusive in ("no", "yes"):
        out, err, rc = runner.run(["callgrind_annotate", "--threshold=100", "--auto=no",
                                   "--show-percs=no", "--inclusive=" + inclusive, outfile],
                                  as_user=False, timeout=600, check=False)
        for line in out.splitlines():
            m = re.match(r"\s*([0-9,]+)\s+(\S+):(\S+)(?:\s+\[(.*)\])?", line)
            if not m:
                continue
            cost = int(m.group(1).replace(",", ""))
            fn, obj = m.group(3), m.group(4) or ""
            if inclusive == "no":
                for lib in ("pgsentinel.so", "pg_wait_sampling.so"):
                    if obj.endswith(lib):
                        res["self:" + lib] = res.get("self:" + lib, 0) + cost
                        res["fn:" + fn] = res.get("fn:" + fn, 0) + cost
            elif fn in ("JumbleQuery", "pgstat_report_query_id"):
                res["incl:" + fn] = max(res.get("incl:" + fn, 0), cost)
    return res


def proc_cpu_ns(pid):
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def proc_faults_ctx(pid):
    """(minor faults, voluntary + involuntary context switches) of pid."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    minflt = int(st[st.rindex(")") + 2:].split()[7])
    ctx = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                ctx += int(line.split()[1])
    return minflt, ctx


def proc_status(pid):
    d = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssShmem", "RssFile", "VmHWM"):
                d[k] = int(v.split()[0])
    return d


# --------------------------------------------------------------------------
# session workload: sleepers, CPU loops, lock waiters behind a holder, idle

CPU_SQL = ("DO $$DECLARE d timestamptz := clock_timestamp() + interval '900 s'; "
           "x bigint := 0; BEGIN WHILE clock_timestamp() < d LOOP x := x + 1; "
           "END LOOP; END $$")
SLEEP_SQL = "SELECT pg_sleep(900)"
LOCK_SQL = ("SET lock_timeout = '900s'; "
            "UPDATE bench_lock SET v = v + 1 WHERE id = 1")


def mix(active):
    """The active mix: 10 % CPU loops (at most 10: 2 cores), the rest half
    sleepers, half lock waiters."""
    n_cpu = min(10, max(1, active // 10))
    n_sleep = (active - n_cpu) // 2
    n_lock = active - n_cpu - n_sleep
    return n_sleep, n_cpu, n_lock


class Workload:
    def __init__(self, cl, n_sleep=0, n_cpu=0, n_lock=0, n_idle=0):
        self.cl = cl
        self.n = dict(sleep=n_sleep, cpu=n_cpu, lock=n_lock, idle=n_idle)
        self.conns = []

    def _open(self, app):
        c = PgConn(self.cl.sockpath(), app)
        CONNS.append(c)
        self.conns.append(c)
        return c

    def start(self):
        n = self.n
        # Open every connection first: once the CPU loops run, forking and
        # initialising new backends on 2 cores becomes very slow.
        for _ in range(n["idle"]):
            self._open("bench_idle")
        holder = self._open("bench_holder") if n["lock"] else None
        sleepers = [self._open("bench_sleep") for _ in range(n["sleep"])]
        lockers = [self._open("bench_lock") for _ in range(n["lock"])]
        cpus = [self._open("bench_cpu") for _ in range(n["cpu"])]
        if holder:
            holder.query("BEGIN; UPDATE bench_lock SET v = v + 1 WHERE id = 1")
        for c in sleepers:
            c.send(SLEEP_SQL)
        for c in lockers:
            c.send(LOCK_SQL)
        for c in cpus:
            c.send(CPU_SQL)
        want = n["sleep"] + n["cpu"] + n["lock"]
        deadline = time.time() + 90
        got = -1
        while time.time() < deadline:
            got = int(self.cl.psql(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND "
                "application_name IN ('bench_sleep', 'bench_cpu', 'bench_lock') AND "
                "(application_name <> 'bench_lock' OR wait_event_type = 'Lock')"))
            if got >= want:
                break
            time.sleep(0.3)
        if got < want:
            log("warning: only %d of %d sessions active" % (got, want))

    def stop(self):
        for c in self.conns:
            if c in CONNS:
                CONNS.remove(c)
            c.close()
        self.conns = []
        if self.cl.running:
            try:
                self.cl.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE application_name LIKE 'bench\\_%'")
                deadline = time.time() + 30
                while time.time() < deadline:
                    if self.cl.psql("SELECT count(*) FROM pg_stat_activity WHERE "
                                    "application_name LIKE 'bench\\_%'") == "0":
                        break
                    time.sleep(0.2)
            except RuntimeError as e:
                log("warning: terminating sessions: %s" % e)


def pws_profile_sum(cl):
    try:
        return int(cl.mon().fetch("SELECT coalesce(sum(count), 0) "
                                  "FROM pg_wait_sampling_profile")[0][0])
    except (RuntimeError, ValueError, OSError):
        return None


def measure_samplers(cl, periods, window):
    """CPU per sample of each sampler in periods ({kind: period s}), all
    over the same window."""
    kinds = sorted(periods)
    pids = {k: cl.wait_sampler(k) for k in kinds}
    # counters read, then CPU read at once; the same in reverse at the end
    st0 = cl.pgs_status() if "pgs" in kinds else None
    prof0 = pws_profile_sum(cl) if "pws" in kinds else None
    c0 = {k: proc_cpu_ns(pids[k]) for k in kinds}
    t0 = time.monotonic()
    fx0 = {k: proc_faults_ctx(pids[k]) for k in kinds}
    time.sleep(window)
    fx1 = {k: proc_faults_ctx(pids[k]) for k in kinds}
    t1 = time.monotonic()
    c1 = {k: proc_cpu_ns(pids[k]) for k in kinds}
    st1 = cl.pgs_status() if "pgs" in kinds else None
    elapsed = t1 - t0
    out = {}
    for kind in kinds:
        nominal = elapsed / periods[kind]
        if kind == "pgs":
            samples = st1["samples_taken"] - st0["samples_taken"]
        else:
            # pg_wait_sampling does not count its samples: take the growth of
            # its profile counters divided by the items one sample adds (from
            # the history), falling back to window / period.
            samples = nominal
            try:
                prof1 = pws_profile_sum(cl)
                per = float(cl.mon().fetch(
                    "SELECT count(*)::float8 / greatest(count(DISTINCT ts), 1) "
                    "FROM pg_wait_sampling_history")[0][0])
                if prof0 is not None and prof1 is not None and per > 0:
                    samples = (prof1 - prof0) / per
            except (RuntimeError, ValueError):
                pass
        cpu = c1[kind] - c0[kind]
        (f0, x0), (f1, x1) = fx0[kind], fx1[kind]
        res = dict(pid=pids[kind], cpu_ns=cpu, elapsed=elapsed, samples=samples,
                   load=loadavg1(), nominal_samples=nominal,
                   us_per_sample=cpu / 1000.0 / max(samples, 1e-9),
                   cpu_pct=cpu / 1e9 / elapsed * 100.0,
                   faults_per_sample=(f1 - f0) / max(samples, 1e-9),
                   ctx_per_sample=(x1 - x0) / max(samples, 1e-9))
        if kind == "pgs":
            res.update(ash_rows=st1["ash_rows"], ash_capacity=st1["ash_capacity"],
                       text_area_used=st1["text_area_used"],
                       last_sample_us=st1["last_sample_us"],
                       max_sample_us=st1["max_sample_us"],
                       max_lock_wait_us=st1["max_lock_wait_us"],
                       sample_overruns=st1["sample_overruns"],
                       rows_per_sample=(st1["ash_rows"] - st0["ash_rows"]) / max(samples, 1)
                       if st1["ash_rows"] < st1["ash_capacity"] else None)
        res["rss"] = proc_status(pids[kind])
        out[kind] = res
    return out


def measure_sampler(cl, kind, period, window):
    return measure_samplers(cl, {kind: period}, window)[kind]


def check_ash_rows(cl, n):
    """Sanity check of the last complete sample against the known workload."""
    # one read of the view (a materialized CTE), so the ring cannot move on
    # between finding the sample and reading its rows
    out = cl.psql(
        "WITH a AS MATERIALIZED (SELECT * FROM pg_active_session_history), "
        "s AS (SELECT max(sample_id) - 1 AS id FROM a) "
        "SELECT application_name, coalesce(wait_event_type, '-'), coalesce(wait_event, '-'), "
        "count(*), count(*) FILTER (WHERE blockers > 0 AND blockerpid IS NOT NULL), "
        "count(*) FILTER (WHERE coalesce(queryid, 0) = 0), "
        "count(*) FILTER (WHERE query IS NULL), count(DISTINCT pid) "
        "FROM a, s WHERE sample_id = s.id "
        "AND application_name LIKE 'bench\\_%' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")
    groups = [l.split("|") for l in out.splitlines() if l]
    problems = []
    by_app = {}
    for app, wt, we, cnt, blk, noqid, notext, npid in groups:
        by_app.setdefault(app, []).append((wt, we, int(cnt), int(blk), int(noqid),
                                           int(notext), int(npid)))
    def total(app):
        return sum(g[2] for g in by_app.get(app, []))
    for app, key in (("bench_sleep", "sleep"), ("bench_cpu", "cpu"), ("bench_lock", "lock")):
        if total(app) != n[key]:
            problems.append("%s: %d rows in one sample, %d sessions" % (app, total(app), n[key]))
    for wt, we, cnt, blk, noqid, notext, npid in by_app.get("bench_sleep", []):
        if (wt, we) != ("Timeout", "PgSleep"):
            problems.append("bench_sleep rows with wait %s/%s: %d" % (wt, we, cnt))
    for wt, we, cnt, blk, noqid, notext, npid in by_app.get("bench_lock", []):
        if wt != "Lock" or blk != cnt:
            problems.append("bench_lock rows %s/%s: %d, with blockers %d" % (wt, we, cnt, blk))
    for app, gs in by_app.items():
        for wt, we, cnt, blk, noqid, notext, npid in gs:
            if noqid:
                problems.append("%s: %d rows without queryid" % (app, noqid))
            if notext:
                problems.append("%s: %d rows without query text" % (app, notext))
            if npid != cnt:
                problems.append("%s: %d rows for %d pids in one sample" % (app, cnt, npid))
    if by_app.get("bench_idle") or by_app.get("bench_holder"):
        problems.append("idle sessions sampled: %s" % {k: v for k, v in by_app.items()
                                                       if k in ("bench_idle", "bench_holder")})
    return dict(groups=groups, problems=problems)


# --------------------------------------------------------------------------
# the benchmark

class Bench:
    def __init__(self, args, runner):
        self.a = args
        self.r = runner
        self.quick = args.quick
        self.res = dict(metric1={}, same_cluster=[], breakdown={}, conn1000={}, tps={}, callgrind={},
                        shmem={}, read={}, checks=[], order={})
        self.t_start = time.time()

    # parameters of the two modes
    def p(self, name):
        quick = dict(rounds=1, window=2, warm=1.0, tps_secs=3, cg_n=100, bd_window=1,
                     same_windows=2, same_window=2,
                     read_rows=10000, c1000=False, c1000_window=3, c1000_configs=[], sampler_variants=[
                         "pgs10ms-fresh", "pgs10ms-full", "pws10ms"],
                     tps_configs=["none", "pgs10ms", "pws10ms"],
                     cg_configs=["none", "pgsentinel"], profile_configs=["pgs10ms"],
                     profile_secs=2, cg_reps=1)
        full = dict(rounds=3, window=8, warm=2.0, tps_secs=20, cg_n=1000, bd_window=6,
                    same_windows=6, same_window=8,
                    read_rows=100000, c1000=True, c1000_window=8, sampler_variants=None,
                    c1000_configs=["pgs1s", "pgs10ms", "pws10ms"],
                    tps_configs=TPS_CONFIGS, cg_configs=None,
                    profile_configs=["pgs10ms", "pws10ms"], profile_secs=10, cg_reps=2)
        v = (quick if self.quick else full)[name]
        ov = getattr(self.a, name, None)
        return ov if ov is not None else v

    def setup(self):
        global TMP_ROOT
        TMP_ROOT = tempfile.mkdtemp(prefix="pgsbench.", dir="/tmp")
        os.chmod(TMP_ROOT, 0o755)
        for d in ("sock", "log"):
            os.makedirs(os.path.join(TMP_ROOT, d))
        if self.r.run_as:
            pw = pwd.getpwnam(self.r.run_as)
            for d in (TMP_ROOT, os.path.join(TMP_ROOT, "sock"), os.path.join(TMP_ROOT, "log")):
                os.chown(d, pw.pw_uid, pw.pw_gid)
        port = None
        rnd = random.Random(os.getpid())
        for _ in range(100):
            cand = rnd.randint(20000, 29999)
            if not os.path.exists("/tmp/.s.PGSQL.%d" % cand) and \
                    not os.path.exists("/var/run/postgresql/.s.PGSQL.%d" % cand):
                port = cand
                break
        self.cl = Cluster(self.r, TMP_ROOT, port or 25432)
        log("initdb in %s, port %d" % (TMP_ROOT, self.cl.port))
        self.cl.initdb()
        self.cl.start("pgsentinel,pg_wait_sampling", {}, "setup")
        cl = self.cl
        cl.psql("CREATE DATABASE %s" % DB, db="postgres")
        cl.psql("CREATE EXTENSION pgsentinel; CREATE EXTENSION pg_wait_sampling; "
                "CREATE EXTENSION pg_prewarm; "
                "CREATE TABLE bench_lock (id int PRIMARY KEY, v bigint); "
                "INSERT INTO bench_lock VALUES (1, 0)")
        log("pgbench -i -s 10")
        self.r.run(["pgbench", "-i", "-q", "-s", "10", "-h", cl.sock, "-p", str(cl.port),
                    "-U", ROLE, DB], as_user=False, timeout=600)
        cl.psql("VACUUM ANALYZE")
        cl.psql("CHECKPOINT")
        cl.stop()

    # ---------------------------------------------------------- metric 1
    def metric1(self):
        variants = [v for v in sampler_variants()
                    if self.p("sampler_variants") is None or v[0] in self.p("sampler_variants")]
        n_sleep, n_cpu, n_lock = mix(100)
        self.res["mix100"] = dict(sleep=n_sleep, cpu=n_cpu, lock=n_lock, idle=100)
        window = self.p("window")
        for rnd in range(self.p("rounds")):
            order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
            self.res["order"].setdefault("metric1", []).append([v[0] for v in order])
            for key, cfg, extra, ring in order:
                label, preload, settings, kind, period = CONFIGS[cfg]
                s = dict(settings)
                s.update(extra)
                log("metric 1 round %d: %s" % (rnd + 1, key))
                self.cl.start(preload, s, key)
                wl = Workload(self.cl, n_sleep, n_cpu, n_lock, 100)
                try:
                    wl.start()
                    warm = self.p("warm")
                    if ring == "full":
                        # wrap first: 1000 rows = 10 samples of ~100 rows
                        warm = max(warm, 12 * period)
                    time.sleep(warm)
                    m = measure_sampler(self.cl, kind, period, window)
                    m["round"] = rnd
                    if kind == "pgs":
                        if ring == "full" and m["ash_rows"] < m["ash_capacity"]:
                            log("warning: ring not full (%d rows)" % m["ash_rows"])
                        if cfg == "pgs10ms" or self.quick:
                            chk = check_ash_rows(self.cl, wl.n)
                            m["check"] = chk
                            for pr in chk["problems"]:
                                self.res["checks"].append("%s round %d: %s" % (key, rnd + 1, pr))
                    self.res["metric1"].setdefault(key, []).append(m)
                    log("  %.1f us/sample (%.0f samples, %.2f %% CPU)" %
                        (m["us_per_sample"], m["samples"], m["cpu_pct"]))
                finally:
                    wl.stop()
                    self.cl.stop()

    # ------------------------------------- metric 1, both in one cluster
    def same_cluster(self):
        """Both samplers loaded in one cluster at 10 ms, the metric-1
        workload, their CPU per sample read over the very same windows: the
        comparison least exposed to the machine's noise (what the other
        tenants do moves both figures of a window alike)."""
        n_sleep, n_cpu, n_lock = mix(100)
        s = dict(CONFIGS["pgs10ms"][2])
        s["pgsentinel_ash.max_entries"] = FULL_ENTRIES
        log("metric 1, same cluster: pgsentinel 10 ms + pg_wait_sampling 10 ms")
        self.cl.start("pgsentinel,pg_wait_sampling", s, "same-cluster")
        wl = Workload(self.cl, n_sleep, n_cpu, n_lock, 100)
        try:
            wl.start()
            time.sleep(max(self.p("warm"), 0.2))
            for w in range(self.p("same_windows")):
                m = measure_samplers(self.cl, {"pgs": 0.01, "pws": 0.01},
                                     self.p("same_window"))
                self.res["same_cluster"].append(m)
                log("  window %d: pgsentinel %.1f us/sample, pg_wait_sampling %.1f "
                    "(%.2fx)" % (w + 1, m["pgs"]["us_per_sample"],
                                 m["pws"]["us_per_sample"],
                                 m["pgs"]["us_per_sample"] /
                                 max(m["pws"]["us_per_sample"], 1e-9)))
        finally:
            wl.stop()
            self.cl.stop()

    # ------------------------------------------------ metric 1 breakdown
    def breakdown(self):
        """Where the sampler's time goes: the same cluster, one workload after
        the other, at 10 ms with the ring full (steady state)."""
        window = self.p("bd_window")
        phases = [("no client sessions", (0, 0, 0, 0)),
                  ("200 idle", (0, 0, 0, 200)),
                  ("100 pg_sleep + 100 idle", (100, 0, 0, 100)),
                  ("100 lock waiters + 100 idle", (0, 0, 100, 100))]
        for cfg, extra in (("pgs10ms", {"pgsentinel_ash.max_entries": FULL_ENTRIES}),
                           ("pws10ms", {})):
            label, preload, settings, kind, period = CONFIGS[cfg]
            s = dict(settings)
            s.update(extra)
            log("breakdown: %s" % cfg)
            self.cl.start(preload, s, "breakdown-" + cfg)
            try:
                for name, (ns, nc, nl, ni) in phases:
                    wl = Workload(self.cl, ns, nc, nl, ni)
                    try:
                        wl.start()
                        time.sleep(self.p("warm"))
                        m = measure_sampler(self.cl, kind, period, window)
                        self.res["breakdown"].setdefault(cfg, []).append((name, m))
                        log("  %s: %.1f us/sample" % (name, m["us_per_sample"]))
                    finally:
                        wl.stop()
            finally:
                self.cl.stop()

    # ---------------------------------------------- metric 1 at 1000 conns
    def conn1000(self):
        if not self.p("c1000"):
            return
        n_sleep, n_cpu, n_lock = mix(500)
        self.res["mix500"] = dict(sleep=n_sleep, cpu=n_cpu, lock=n_lock, idle=500)
        for cfg in self.p("c1000_configs"):
            label, preload, settings, kind, period = CONFIGS[cfg]
            s = dict(settings)
            s["max_connections"] = "1100"
            if kind == "pgs":
                s["pgsentinel_ash.max_entries"] = FULL_ENTRIES
            log("1000 connections: %s" % cfg)
            self.cl.start(preload, s, "c1000-" + cfg)
            wl = Workload(self.cl, n_sleep, n_cpu, n_lock, 500)
            try:
                wl.start()
                time.sleep(max(self.p("warm"), 3 * period))
                m = measure_sampler(self.cl, kind, period, self.p("c1000_window"))
                self.res["conn1000"][cfg] = m
                log("  %.1f us/sample" % m["us_per_sample"])
            finally:
                wl.stop()
                self.cl.stop()

    # ------------------------------------------------ metric 1 profile
    def profile(self):
        """perf with the software cpu-clock event (no hardware counters needed)
        on the sampling process under the metric-1 workload at 10 ms."""
        if not shutil.which("perf"):
            self.res["profile"] = {"note": "perf not installed: no profile"}
            return
        n_sleep, n_cpu, n_lock = mix(100)
        secs = self.p("profile_secs")
        for cfg, extra in (("pgs10ms", {"pgsentinel_ash.max_entries": FULL_ENTRIES}),
                           ("pws10ms", {})):
            if cfg not in self.p("profile_configs"):
                continue
            label, preload, settings, kind, period = CONFIGS[cfg]
            s = dict(settings)
            s.update(extra)
            log("profile: %s" % cfg)
            self.cl.start(preload, s, "profile-" + cfg)
            wl = Workload(self.cl, n_sleep, n_cpu, n_lock, 100)
            data = os.path.join(TMP_ROOT, "perf-%s.data" % cfg)
            try:
                wl.start()
                time.sleep(self.p("warm"))
                pid = self.cl.wait_sampler(kind)
                self.r.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-g",
                            "-p", str(pid), "-o", data, "--", "sleep", str(secs)],
                           as_user=False, timeout=secs + 120)
            finally:
                wl.stop()
                self.cl.stop()
            rows = []
            try:
                out, err, rc = self.r.run(
                    ["perf", "report", "-i", data, "--stdio", "--no-children", "-g", "none",
                     "--sort", "dso,symbol", "--percent-limit", "0.7"],
                    as_user=False, timeout=300)
                for line in out.splitlines():
                    m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(.+?)\s*$", line)
                    if m:
                        rows.append((float(m.group(1)), m.group(2), clean_sym(m.group(4))))
                out2, _, _ = self.r.run(
                    ["perf", "report", "-i", data, "--stdio", "--children", "-g", "none",
                     "--sort", "symbol", "--percent-limit", "3"],
                    as_user=False, timeout=300)
                incl = []
                for line in out2.splitlines():
                    m = re.match(r"\s*([0-9.]+)%\s+([0-9.]+)%\s+\[(.)\]\s+(.+?)\s*$", line)
                    if m and not re.match(r"(0x)?[0-9a-f]+$|__restore_rt", clean_sym(m.group(4))):
                        incl.append((float(m.group(1)), float(m.group(2)), clean_sym(m.group(4))))
            except RuntimeError as e:
                rows = [(0.0, "perf report failed", str(e)[:200])]
                incl = []
            self.res.setdefault("profile", {})[cfg] = dict(self_=rows[:25], incl=incl[:25],
                                                          secs=secs)
            if os.path.exists(data):
                os.unlink(data)

    # ---------------------------------------------------------- metric 2
    def pgbench(self, args, secs):
        out, err, rc = self.r.run(["pgbench", "-n", "-c", "4", "-j", "2", "-T", str(secs)] +
                                  args + ["-h", self.cl.sock, "-p", str(self.cl.port),
                                          "-U", ROLE, DB], as_user=False, timeout=secs + 120)
        m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out)
        n = re.search(r"number of transactions actually processed: (\d+)", out)
        if not m or not n:
            raise RuntimeError("no tps in pgbench output: " + out[-500:] + err[-500:])
        return float(m.group(1)), int(n.group(1))

    def server_cpu_us(self, sampler_pid):
        """CPU of the postmaster and of its reaped children (the backends that
        served a finished pgbench run), plus the live sampler's."""
        with open(os.path.join(self.cl.data, "postmaster.pid")) as f:
            pm = int(f.readline())
        with open("/proc/%d/stat" % pm) as f:
            st = f.read()
        fl = st[st.rindex(")") + 2:].split()
        ticks = sum(int(x) for x in fl[11:15])
        us = ticks * 1e6 / os.sysconf("SC_CLK_TCK")
        if sampler_pid:
            us += proc_cpu_ns(sampler_pid) / 1000.0
        return us

    def metric2_tps(self):
        secs = self.p("tps_secs")
        configs = self.p("tps_configs")
        for rnd in range(self.p("rounds")):
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
            self.res["order"].setdefault("tps", []).append(order)
            for cfg in order:
                label, preload, settings, kind, period = CONFIGS[cfg]
                log("metric 2 round %d: %s" % (rnd + 1, cfg))
                self.cl.start(preload, settings, "tps-" + cfg)
                try:
                    self.cl.psql("SELECT pg_prewarm('pgbench_accounts'), "
                                 "pg_prewarm('pgbench_accounts_pkey'), "
                                 "pg_prewarm('pgbench_branches'), pg_prewarm('pgbench_tellers')")
                    tests = [("select", ["-S"]), ("tpcb", [])]
                    if rnd % 2:
                        tests.reverse()
                    spid = self.cl.wait_sampler(kind) if kind else None
                    self.cl.mon_close()
                    for name, args in tests:
                        time.sleep(0.5)
                        cpu0 = self.server_cpu_us(spid)
                        tps, ntx = self.pgbench(args, secs)
                        time.sleep(0.5)      # let the postmaster reap the backends
                        cpu1 = self.server_cpu_us(spid)
                        self.res["tps"].setdefault(name, {}).setdefault(cfg, []).append(tps)
                        self.res.setdefault("cpu_per_tx", {}).setdefault(name, {}).setdefault(
                            cfg, []).append((cpu1 - cpu0) / max(ntx, 1))
                        self.res.setdefault("tps_load", []).append(loadavg1())
                        log("  %s: %.0f tps" % (name, tps))
                finally:
                    self.cl.stop()

    def metric2_callgrind(self):
        n = self.p("cg_n")
        rnd = random.Random(12345)
        aids = [rnd.randint(1, 1000000) for _ in range(2 * n)]
        files = {}
        for k in (n, 2 * n):
            path = os.path.join(TMP_ROOT, "stmts-%d.sql" % k)
            with open(path, "w") as f:
                for aid in aids[:k]:
                    f.write("SELECT abalance FROM pgbench_accounts WHERE aid = %d;\n" % aid)
            files[k] = path
        cg_configs = CG_CONFIGS
        # One unmeasured pass first, so that hint bits and page pruning are
        # done before any measured run (single-user SELECTs may prune).
        self.cl.write_config("", {})
        with open(files[2 * n]) as stdin:
            self.r.run([self.r.bin("postgres"), "--single", "-D", self.cl.data, DB],
                       stdin=stdin, timeout=600, capture=True)
        reps = self.p("cg_reps")
        kept = {}
        cg_configs = [c for c in cg_configs
                      if self.p("cg_configs") is None or c[0] in self.p("cg_configs")]
        for rep in range(reps):
            for name, preload, extra, _ in cg_configs:
                self.cl.write_config(preload, extra)
                counts = {}
                for k in (n, 2 * n):
                    outfile = os.path.join(TMP_ROOT, "callgrind.out")
                    with open(files[k]) as stdin:
                        out, err, rc = self.r.run(
                            ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outfile,
                             self.r.bin("postgres"), "--single", "-D", self.cl.data, DB],
                            stdin=stdin, timeout=1200, check=False, capture=True)
                    m = re.search(r"Collected : (\d+)", err)
                    if rc != 0 or not m:
                        raise RuntimeError("callgrind run failed (%d): %s" % (rc, err[-1500:]))
                    counts[k] = int(m.group(1))
                    if rep == 0 and name != "none" and os.path.exists(outfile):
                        kept[(name, k)] = outfile + ".%s.%d" % (name, k)
                        os.rename(outfile, kept[(name, k)])
                    elif os.path.exists(outfile):
                        os.unlink(outfile)
                per = (counts[2 * n] - counts[n]) / n
                self.res["callgrind"].setdefault(name, []).append(
                    dict(n=n, i_n=counts[n], i_2n=counts[2 * n], per_stmt=per))
                log("callgrind %s: %.1f instructions/statement" % (name, per))
        self.res["callgrind_n"] = n
        # Where the extra instructions go: self cost of the extension's own
        # functions and inclusive cost of the query-id computation, per
        # statement ((2N - N) / N again).
        parts = {}
        for name in [c[0] for c in cg_configs if c[0] != "none"]:
            if (name, n) not in kept or (name, 2 * n) not in kept:
                continue
            vals = {}
            for k in (n, 2 * n):
                vals[k] = annotate_parts(self.r, kept[(name, k)])
            keys = set(vals[n]) | set(vals[2 * n])
            parts[name] = {key: (vals[2 * n].get(key, 0) - vals[n].get(key, 0)) / n
                           for key in keys}
        for f in kept.values():
            if os.path.exists(f):
                os.unlink(f)
        self.res["callgrind_parts"] = parts

    # ---------------------------------------------------------- metric 5
    def metric5(self):
        """Statements history: CPU of the statements worker per reading, with
        pg_stat_statements holding 100, 1000 and 5000 entries (SQL functions
        bench_f1..N each called once: one entry each), ten sleeping sessions
        sampled every 100 ms."""
        settings = {"pg_stat_statements.max": "10000",
                    "pgsentinel_ash.sampling_period": "0.1",
                    "pgsentinel.db_name": DB}
        top = max(PGSSH_ENTRIES)
        create = ("DO $$BEGIN FOR i IN 1..%d LOOP EXECUTE format("
                  "'CREATE FUNCTION bench_f%%s() RETURNS int LANGUAGE sql "
                  "AS ''SELECT %%s''', i, i); END LOOP; END$$" % top)
        drop = ("DO $$BEGIN FOR i IN 1..%d LOOP EXECUTE format("
                "'DROP FUNCTION IF EXISTS bench_f%%s()', i); END LOOP; END$$" % top)
        self.cl.start("pg_stat_statements,pgsentinel", settings, "metric5")
        try:
            self.cl.psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            self.cl.psql(create)
            deadline = time.time() + 60
            while self.cl.psql("SELECT pgssh_state FROM pgsentinel_status()") != "ok":
                if time.time() > deadline:
                    raise RuntimeError("statements history not ok: %s" % self.cl.psql(
                        "SELECT pgssh_message FROM pgsentinel_status()"))
                time.sleep(0.5)
            # the last one again at 10 ms: the worker's rest caps its CPU
            runs = [(n, 0.1) for n in PGSSH_ENTRIES] + [(PGSSH_ENTRIES[-1], 0.01)]
            for n, period in runs:
                if period != 0.1:
                    self.cl.psql("ALTER SYSTEM SET pgsentinel_ash.sampling_period = %g" % period)
                    self.cl.psql("SELECT pg_reload_conf()")
                else:
                    self.cl.psql("SELECT pg_stat_statements_reset()")
                    self.cl.psql_script("".join("SELECT bench_f%d();\n" % i
                                                for i in range(1, n + 1)))
                wl = Workload(self.cl, n_sleep=10)
                try:
                    wl.start()
                    time.sleep(self.p("warm") + 1)
                    pid = int(self.cl.psql("SELECT pgssh_worker_pid FROM pgsentinel_status()"))
                    s0 = int(self.cl.psql("SELECT pgssh_samples FROM pgsentinel_status()"))
                    c0 = proc_cpu_ns(pid)
                    time.sleep(self.p("window"))
                    c1 = proc_cpu_ns(pid)
                    row = self.cl.row("SELECT pgssh_samples, pgssh_last_us, "
                                      "(SELECT count(*) FROM pg_stat_statements) "
                                      "FROM pgsentinel_status()")
                    readings = int(row[0]) - s0
                    m = dict(entries=n, pgss_entries=int(row[2]), readings=readings,
                             window=self.p("window"), period=period,
                             samples_per_window=self.p("window") / period,
                             cpu_pct=(c1 - c0) / 1e9 / self.p("window") * 100,
                             us_per_reading=(c1 - c0) / 1000.0 / max(readings, 1),
                             last_us=int(row[1]))
                    self.res.setdefault("pgssh", []).append(m)
                    log("metric 5: %d entries: %.0f us per reading (%d readings)" %
                        (m["pgss_entries"], m["us_per_reading"], readings))
                finally:
                    wl.stop()
        finally:
            try:
                self.cl.psql("ALTER SYSTEM RESET pgsentinel_ash.sampling_period")
                self.cl.psql(drop)
            except RuntimeError as e:
                log("warning: dropping bench functions: %s" % e)
            self.cl.stop()

    # ---------------------------------------------------------- metric 3
    def metric3(self):
        sizes = {}
        for rows in (10000, 110000, 36000):
            extra = {"pgsentinel_ash.sampling_period": "1"}
            if rows != 36000:
                extra["pgsentinel_ash.max_entries"] = str(rows)
            self.cl.start("pgsentinel", extra, "shmem-%d" % rows)
            try:
                size = int(self.cl.psql("SELECT size FROM pg_shmem_allocations "
                                        "WHERE name = 'pgsentinel'"))
                st = self.cl.pgs_status()
                sizes[rows] = dict(size=size, ash_row_bytes=st["ash_row_bytes"],
                                   shmem_bytes=st["shmem_bytes"],
                                   text_area_size=st["text_area_size"],
                                   capacity=st["ash_capacity"])
            finally:
                self.cl.stop()
        self.res["shmem"] = sizes

    # ---------------------------------------------------------- metric 4
    def metric4(self):
        target = self.p("read_rows")
        n_sleep, n_cpu, n_lock = mix(100)
        reads = {
            "pgs": [("count", "SELECT count(*) FROM pg_active_session_history"),
                    ("group", "SELECT wait_event_type, wait_event, count(*) "
                              "FROM pg_active_session_history GROUP BY 1, 2"),
                    ("select_all", "SELECT * FROM pg_active_session_history")],
            "pws": [("count", "SELECT count(*) FROM pg_wait_sampling_history"),
                    ("group", "SELECT event_type, event, count(*) "
                              "FROM pg_wait_sampling_history GROUP BY 1, 2"),
                    ("select_all", "SELECT * FROM pg_wait_sampling_history")],
        }
        for kind, preload, extra in (
                ("pgs", "pgsentinel", {"pgsentinel_ash.sampling_period": "0.01",
                                       "pgsentinel_ash.max_entries": str(target)}),
                ("pws", "pg_wait_sampling", {"pg_wait_sampling.history_size": str(target)})):
            log("metric 4: %s" % kind)
            self.cl.start(preload, extra, "read-" + kind)
            wl = Workload(self.cl, n_sleep, n_cpu, n_lock, 100)
            try:
                wl.start()
                t0 = time.time()
                rows = 0
                deadline = time.time() + (60 if self.quick else 180)
                while time.time() < deadline:
                    if kind == "pgs":
                        rows = self.cl.pgs_status()["ash_rows"]
                    else:
                        rows = int(self.cl.psql("SELECT count(*) FROM pg_wait_sampling_history"))
                    if rows >= target:
                        break
                    time.sleep(1)
                fill_s = time.time() - t0
                # Reads run with the sampler still sampling ~90 sessions, but
                # without the CPU-bound loops that would otherwise starve the
                # reader (and everyone else) on 2 cores.
                self.cl.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE application_name = 'bench_cpu'")
                deadline = time.time() + 30
                while time.time() < deadline and self.cl.psql(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE application_name = 'bench_cpu'") != "0":
                    time.sleep(0.3)
                time.sleep(1)
                r = dict(rows=rows, fill_s=fill_s, times={})
                if kind == "pgs":
                    r["status_before"] = self.cl.pgs_status()
                # the queries interleaved, 5 times, in one session
                qs = [(qn, sql) for qn, sql in reads[kind]
                      if not (self.quick and qn == "select_all")]
                script = "\\timing on\n" + "".join(sql + ";\n" for _, sql in qs) * 5
                out = self.cl.psql_script(script)
                ms = [float(x) for x in re.findall(r"Time: ([0-9.]+) ms", out)]
                for i, (qname, sql) in enumerate(qs):
                    r["times"][qname] = ms[i::len(qs)]
                    log("  %s: best %.1f ms, median %.1f ms" % (
                        qname, min(r["times"][qname]), statistics.median(r["times"][qname])))
                if kind == "pgs":
                    r["status_after"] = self.cl.pgs_status()
                    r["rss"] = proc_status(r["status_after"]["worker_pid"])
                    r["rows_check"] = self.cl.psql(
                        "SELECT count(*), count(DISTINCT sample_id), "
                        "count(*) FILTER (WHERE pid IS NULL OR ash_time IS NULL) "
                        "FROM pg_active_session_history")
                self.res["read"][kind] = r
            finally:
                wl.stop()
                self.cl.stop()

    # ---------------------------------------------------------- driver
    def run(self):
        steps = [("setup", self.setup), ("metric 2 callgrind", self.metric2_callgrind),
                 ("metric 3", self.metric3),
                 ("metric 1", self.metric1), ("same cluster", self.same_cluster),
                 ("breakdown", self.breakdown),
                 ("1000 connections", self.conn1000), ("profile", self.profile),
                 ("metric 4", self.metric4), ("metric 5", self.metric5),
                 ("metric 2 tps", self.metric2_tps)]
        only = set(self.a.only.split(",")) if self.a.only else None
        self.res["step_secs"] = {}
        for name, fn in steps:
            if only and name != "setup" and name not in only:
                continue
            t = time.time()
            log("== %s" % name)
            fn()
            self.res["step_secs"][name] = round(time.time() - t, 1)
            with open(os.path.join(BENCH_DIR, "work", "partial.json"), "w") as f:
                json.dump(self.res, f, indent=1, default=str)
        self.res["log_issues"] = self.cl.log_issues[:200]
        self.res["total_secs"] = round(time.time() - self.t_start, 1)


# --------------------------------------------------------------------------
# machine facts (the measurements' write-up is bench/report_writer.py)

def machine_facts(pg_bin):
    facts = {}
    facts["nproc"] = os.cpu_count()
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                facts["mem"] = "%.1f GiB" % (int(line.split()[1]) / 1024 / 1024)
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    facts["cpu"] = cpu
    facts["kernel"] = platform.release()
    try:
        facts["pg"] = subprocess.run([os.path.join(pg_bin, "postgres"), "--version"],
                                     capture_output=True, text=True).stdout.strip()
    except OSError:
        facts["pg"] = "?"
    try:
        facts["pws"] = subprocess.run(["dpkg-query", "-W", "-f=${Version}",
                                       "postgresql-15-pg-wait-sampling"],
                                      capture_output=True, text=True).stdout.strip()
    except OSError:
        facts["pws"] = "?"
    try:
        facts["os"] = open("/etc/debian_version").read().strip()
    except OSError:
        facts["os"] = "?"
    facts["loadavg"] = open("/proc/loadavg").read().split()[:3]
    src = os.path.join(BENCH_DIR, "work", "source.txt")
    if os.path.exists(src):
        lines = open(src).read().split()
        facts["commit"] = lines[0] if lines else "?"
        facts["dirty_files"] = int(lines[1]) if len(lines) > 1 else 0
    return facts


def main():
    global KEEP_TMP
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg-bin")
    ap.add_argument("--run-as", default="")
    ap.add_argument("--command", default="bench/run.sh")
    ap.add_argument("--quick", action="store_true", help="short smoke run (< 3 min)")
    ap.add_argument("--only", help="comma-separated steps (debugging): metric 1, breakdown, "
                                   "1000 connections, metric 2 tps, metric 2 callgrind, "
                                   "metric 3, metric 4, metric 5")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--window", type=float)
    ap.add_argument("--tps-secs", dest="tps_secs", type=int)
    ap.add_argument("--cg-n", dest="cg_n", type=int)
    ap.add_argument("--report", help="default: bench/REPORT.md (full run), "
                                     "bench/work/REPORT-quick.md (--quick or --only)")
    ap.add_argument("--keep", action="store_true", help="keep the /tmp directory")
    ap.add_argument("--report-from", help="rewrite the report from a saved results JSON")
    args = ap.parse_args()
    if args.report_from:
        res = json.load(open(args.report_from))
        res["shmem"] = {int(k): v for k, v in res.get("shmem", {}).items()}
        report_writer.add_summary(res)
        args.command = res.get("command", "bench/run.sh")
        report_writer.write_report(res, res["facts"], args,
                                   args.report or os.path.join(BENCH_DIR, "REPORT.md"),
                                   report_writer.history_rows(None))
        return
    if not args.pg_bin:
        ap.error("--pg-bin is required (bench/run.sh passes it)")
    if not args.report:
        args.report = os.path.join(BENCH_DIR, "REPORT.md") if not (args.quick or args.only) \
            else os.path.join(BENCH_DIR, "work", "REPORT-quick.md")
    KEEP_TMP = args.keep

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    runner = Runner(args.pg_bin, args.run_as)
    b = Bench(args, runner)
    b.res["load_start"] = open("/proc/loadavg").read().split()[:3]
    b.res["date"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    try:
        b.run()
    finally:
        cleanup()
    res = b.res
    res["command"] = args.command
    res["params"] = {k: b.p(k) for k in ("rounds", "window", "warm", "tps_secs", "cg_n",
                                         "bd_window", "read_rows", "c1000_window",
                                         "same_windows", "same_window")}
    report_writer.add_summary(res)
    facts = machine_facts(args.pg_bin)
    res["facts"] = facts
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    if not args.quick and not args.only:
        os.makedirs(os.path.join(BENCH_DIR, "runs"), exist_ok=True)
        with open(os.path.join(BENCH_DIR, "runs", "run-%s.json" % stamp), "w") as f:
            json.dump(res, f, indent=1, default=str)
    else:
        with open(os.path.join(BENCH_DIR, "work", "last-%s.json" %
                               ("quick" if args.quick else "partial")), "w") as f:
            json.dump(res, f, indent=1, default=str)
    report_writer.write_report(res, facts, args, args.report, report_writer.history_rows(None))
    log("report written to %s" % args.report)
    for t in res["targets"]:
        log("target: %s: %s: %s" % t)


if __name__ == "__main__":
    main()
