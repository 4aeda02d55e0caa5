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

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
DB = "bench"
ROLE = "bench"

# --------------------------------------------------------------------------
# configurations

# Settings shared by every configuration (written to postgresql.conf).
BASE_SETTINGS = {
    "listen_addresses": "''",
    "shared_buffers": "256MB",
    "max_connections": "250",
    "work_mem": "4MB",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_wal_size": "4GB",
    "checkpoint_timeout": "30min",
    "huge_pages": "off",
    "compute_query_id": "auto",
    "track_activity_query_size": "1024",
    "autovacuum": "on",
    "jit": "off",
    "max_worker_processes": "8",
    "log_min_messages": "warning",
    "log_line_prefix": "'%m [%p] %b '",
}
BASE_SETTINGS_TEXT = (
    "shared_buffers 256MB (pgbench scale 10 fits), max_connections 250 "
    "(1100 for the 1000-connection runs), fsync off, synchronous_commit off, "
    "full_page_writes off, jit off, huge_pages off, compute_query_id auto, "
    "track_activity_query_size 1024, autovacuum on; pg_stat_statements is "
    "loaded only in the callgrind configurations that name it (metric 2).")

# name -> (label, shared_preload_libraries, extra settings, sampler kind, period s)
CONFIGS = {
    "none": ("no extension", "", {}, None, None),
    "noneqid": ("no extension + compute_query_id=on", "", {"compute_query_id": "on"}, None, None),
    "pgs1s": ("pgsentinel 1 s", "pgsentinel",
              {"pgsentinel_ash.sampling_period": "1"}, "pgs", 1.0),
    "pgs100ms": ("pgsentinel 100 ms", "pgsentinel",
                 {"pgsentinel_ash.sampling_period": "0.1"}, "pgs", 0.1),
    "pgs10ms": ("pgsentinel 10 ms", "pgsentinel",
                {"pgsentinel_ash.sampling_period": "0.01"}, "pgs", 0.01),
    "pws10ms": ("pg_wait_sampling 10 ms (default)", "pg_wait_sampling",
                {}, "pws", 0.01),
    "pws1s": ("pg_wait_sampling 1 s", "pg_wait_sampling",
              {"pg_wait_sampling.profile_period": "1000",
               "pg_wait_sampling.history_period": "1000"}, "pws", 1.0),
}
TPS_CONFIGS = ["none", "noneqid", "pgs1s", "pgs100ms", "pgs10ms", "pws10ms", "pws1s"]

# callgrind configurations: (name, shared_preload_libraries, settings, label).
# "placebo" loads a library with no per-statement hook (passwordcheck only
# checks passwords): its difference to the configuration without it is what
# merely loading a library moves (memory layout: memset/memcpy alignment).
# The pg_stat_statements pairs are the issue's own calibration ("over
# pg_stat_statements alone"), where query ids are computed in every case.
CG_CONFIGS = [
    ("none", "", {}, "no extension"),
    ("none+qid", "", {"compute_query_id": "on"}, "no extension + compute_query_id=on"),
    ("placebo+qid", "passwordcheck", {"compute_query_id": "on"},
     "placebo library (passwordcheck) + compute_query_id=on"),
    ("pgsentinel", "pgsentinel", {}, "pgsentinel"),
    ("pg_wait_sampling", "pg_wait_sampling", {}, "pg_wait_sampling"),
    ("pgss", "pg_stat_statements", {}, "pg_stat_statements"),
    ("pgss+pgsentinel", "pg_stat_statements,pgsentinel", {},
     "pg_stat_statements + pgsentinel"),
    ("pgss+pg_wait_sampling", "pg_stat_statements,pg_wait_sampling", {},
     "pg_stat_statements + pg_wait_sampling"),
]
CG_LABELS = {c[0]: c[3] for c in CG_CONFIGS}
CG_REFERENCE = {"none+qid": "none", "placebo+qid": "none+qid", "pgsentinel": "none+qid",
                "pg_wait_sampling": "none", "pgss": "none", "pgss+pgsentinel": "pgss",
                "pgss+pg_wait_sampling": "pgss"}
FRESH_ENTRIES = "300000"   # big enough not to wrap during a metric-1 window
FULL_ENTRIES = "1000"      # the minimum: wraps within 10 samples
PGSSH_ENTRIES = (100, 1000, 5000)   # metric 5: pg_stat_statements entries


def sampler_variants():
    """Metric-1 variants: (key, base config, extra settings, ring state)."""
    v = []
    for c in ("pgs1s", "pgs100ms", "pgs10ms"):
        v.append((c + "-fresh", c, {"pgsentinel_ash.max_entries": FRESH_ENTRIES}, "fresh"))
        v.append((c + "-full", c, {"pgsentinel_ash.max_entries": FULL_ENTRIES}, "full"))
    v.append(("pws10ms", "pws10ms", {}, "-"))
    v.append(("pws1s", "pws1s", {}, "-"))
    return v


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
# report

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


def write_report(res, facts, args, path, history):
    L = []
    w = L.append
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

    # ---- targets
    tg = res["targets"]
    w("## Targets: where we stand")
    w("")
    w("| target | measured | verdict |")
    w("|---|---|---|")
    for t in tg:
        w("| %s | %s | %s |" % t)
    w("")

    # ---- metric 1
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

    # ---- metric 2
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

    # ---- metric 3
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

    # ---- metric 4
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

    # ---- metric 5
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
          "reading the worker rests nine times as long as it took (src/pgssh_worker.c), so it "
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

    # ---- checks
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

    # ---- noise across runs
    if history:
        w("## Run-to-run noise (full runs kept in bench/runs/)")
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
    with open(path, "w") as f:
        f.write("\n".join(L))


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


def targets(res, h):
    t = []

    def v(ok):
        return "met" if ok else "**missed**"
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


def insight(res):
    bd = res.get("breakdown", {})
    lines = []
    p = bd.get("pgs10ms")
    q = bd.get("pws10ms")
    prof = res.get("profile", {}).get("pgs10ms", {})
    incl = {sym: c for c, sf, sym in prof.get("incl", [])}
    selfp = {sym: pct for pct, dso, sym in prof.get("self_", [])}
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
        txt += (" What an active row is made of (src/sampler.c): one load of its status "
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
    if incl or selfp:
        parts = []
        for sym, what in (("pg_blocking_pids", "core's pg_blocking_pids() (now only the "
                           "fallback for lock groups and waiters that moved)"),
                          ("pgs_find_blockers", "the one-pass blocker lookup of all lock "
                           "waiters (src/blockers.c)"),
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
                     "(src/blockers.c), under its partition lock in shared mode: each waiter's "
                     "PROCLOCK and the lock's queue, pointer-chasing through shared memory. "
                     "Each waiter's blocking_pids lists every conflicting waiter ahead of it "
                     "(as pg_blocking_pids() does), n²/2 pids for n waiters, but the waiters "
                     "of one queue share one stored list of which each row shows its prefix, "
                     "so the work and the text stored grow with n." % (
                         nl, c1["pgs10ms"]["us_per_sample"],
                         "%.1f µs with %d waiters, " % (per_lock_45, mx["lock"])
                         if per_lock_45 is not None and per_lock_45 > 0 else "",
                         (v[3] - v[1]) / 100.0, per_lock_1000, nl))
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
        h = headline(res)
        res["headline"] = h
        res["targets"] = targets(res, h)
        res["insight"] = insight(res)
        args.command = res.get("command", "bench/run.sh")
        write_report(res, res["facts"], args, args.report or os.path.join(BENCH_DIR, "REPORT.md"),
                     history_rows(None))
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
    h = headline(res)
    res["headline"] = h
    res["targets"] = targets(res, h)
    res["insight"] = insight(res)
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
    write_report(res, facts, args, args.report, history_rows(None))
    log("report written to %s" % args.report)
    for t in res["targets"]:
        log("target: %s: %s: %s" % t)


if __name__ == "__main__":
    main()
