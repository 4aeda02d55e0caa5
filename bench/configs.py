"""What bench/bench.py measures: the server settings and the configurations
it compares.  Shared by bench.py (measuring) and bench/report_writer.py
(writing up)."""

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

