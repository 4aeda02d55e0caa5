#!/usr/bin/env python3
"""How few bytes the archived columns could take: an estimate, measured.

    python3 bench/archive_floor.py --psql "psql -h SOCKDIR -p PORT -d postgres"
                                   [--from EPOCH] [--to EPOCH] [--json FILE]

Reads the rows of pgsentinel_ash_archive (what the archive holds; run as a
role that sees every row: pg_read_all_stats) of a cluster that archived a
workload (e.g. the read-write run of bench/archive.py --busy, or any cluster
with keep_one_in = 1), splits every column into its own stream in the
encoding that favours it most among a few (the order of the archive's
batches: by session, then sample; times chained from the sample's time or
as differences from the session's previous row, xids from the sample's
smallest or from the session's previous row, whichever compresses better;
waits, states, texts and query ids as ids into dictionaries, not counted,
plus the texts' literal values; constant-per-session columns left out, as
the archive keeps them once a day), and compresses each stream with xz at
its strongest setting (LZMA2, preset 9e, raw: no container header).  The
sum is what the columns take when kept exactly by a compressor far better
than TOAST's: an estimate of the least, not a proof (each column is
compressed apart, so what one says of another is paid twice).  Prints a
Markdown table of bytes per row and per sample, by column.
"""

import argparse
import csv
import io
import json
import lzma
import shlex
import subprocess
import sys

FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]

QUERY = r"""
COPY (
SELECT h.sample_id,
       (extract(epoch FROM h.ash_time) * 1000000)::bigint,
       h.pid,
       (extract(epoch FROM h.backend_start) * 1000000)::bigint,
       (extract(epoch FROM h.xact_start) * 1000000)::bigint,
       (extract(epoch FROM h.query_start) * 1000000)::bigint,
       (extract(epoch FROM h.state_change) * 1000000)::bigint,
       h.wait_event_type || ':' || h.wait_event, h.state,
       h.backend_xid::text::bigint, h.backend_xmin::text::bigint,
       (pgsentinel_text_split(h.top_level_query))[1],
       (pgsentinel_text_split(h.top_level_query))[2],
       CASE WHEN h.query IS DISTINCT FROM h.top_level_query THEN h.query END,
       h.cmdtype, h.queryid, h.nested_queryid, h.blockers, h.blockerpid,
       h.blocker_state, h.blocking_pids::text, h.blocker_usesysid, h.weight,
       h.sample_period
  FROM pgsentinel_ash_archive h
 WHERE true {window}
 ORDER BY h.pid, h.backend_start, h.sample_id
) TO STDOUT WITH (FORMAT csv, NULL '\N')
"""


def varint(n):
    """An unsigned integer in 7-bit groups, low first."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(n):
    return (n << 1) ^ (n >> 63) if n >= 0 else ((-n) << 1) - 1


def signed(n):
    return varint(zigzag(n))


def opt(n):
    """A value that may be NULL: 0 for NULL, else the signed value + 1."""
    return b"\x00" if n is None else varint(zigzag(n) + 1)


class Dict:
    """Ids of distinct values, in the order first seen (not counted: the
    archive keeps each once a day)."""

    def __init__(self):
        self.ids = {}

    def __call__(self, v):
        return self.ids.setdefault(v, len(self.ids))


def measure(psql_argv, lo=None, hi=None):
    """The floor of the archived rows with ash_time in [lo, hi) (epoch
    seconds or None), read with the psql command line psql_argv: rows,
    samples and the compressed bytes of each column's stream."""
    window = ""
    if lo is not None:
        window += " AND h.ash_time >= to_timestamp(%r)" % float(lo)
    if hi is not None:
        window += " AND h.ash_time < to_timestamp(%r)" % float(hi)
    out = subprocess.run(psql_argv + ["-X", "-q", "-c", QUERY.format(window=window)],
                         check=True, capture_output=True).stdout
    rows = list(csv.reader(io.StringIO(out.decode())))
    if not rows:
        return None

    def num(v):
        return None if v == "\\N" else int(v)

    streams = {}

    def put(name, data):
        streams.setdefault(name, bytearray()).extend(data)

    xid_base = {}
    for r in rows:
        for v in (r[9], r[10]):
            if v != "\\N":
                xid_base[int(r[0])] = min(xid_base.get(int(r[0]), 1 << 62), int(v))
    waits, states, cmds, qids, templates, blstates = (Dict() for _ in range(6))
    samples = {}
    prev = None
    for r in rows:
        (sid, t, pid, bstart, xact, qstart, change, wait, state, xid, xmin, tmpl,
         vals, nested, cmd, qid, nqid, blockers, blockerpid, blstate, blpids,
         blusesysid, weight, period) = r
        sid, t = int(sid), int(t)
        # the sample's weight: its rows' largest (an idle row weighs 0)
        if sid not in samples or float(weight) > float(samples[sid][1]):
            samples[sid] = (t, weight, period)
        session = (pid, bstart)
        first = session != prev
        if first:
            prev_ids = {}
        # which samples the session's rows are in: the difference from its
        # previous row's sample (the batches' row_samples)
        put("row samples", signed(sid - (0 if first else last_sid)))
        put("session", b"\x01" if first else b"\x00")
        # times and xids two ways, the smaller kept (below): from a base
        # of the row (the times chained from the sample's: transaction,
        # then statement, then state change; the xids from the sample's
        # smallest), and from the session's previous row's (a long
        # transaction keeps its start and xid)
        x, q, c, xi, xm = num(xact), num(qstart), num(change), num(xid), num(xmin)
        for name, v, base in (("xact_start", x, t),
                              ("query_start", q, t if x is None else x),
                              ("state_change", c, t if q is None else q),
                              ("backend_xid", xi, xid_base.get(sid)),
                              ("backend_xmin", xm, xid_base.get(sid))):
            put(name, opt(None if v is None else v - base))
            put(name + "'", opt(None if v is None else v - prev_ids.get(name, 0)))
            if v is not None:
                prev_ids[name] = v
        put("wait event", varint(waits(wait)))
        put("state", varint(states(state)))
        put("statement (template id)", varint(templates(tmpl)))
        put("literal values", (b"" if vals == "\\N" else vals.encode()) + b"\x00")
        put("nested statement", b"\x00" if nested == "\\N" else nested.encode() + b"\x00")
        put("cmdtype", varint(cmds(cmd)))
        put("queryid", varint(qids(qid)))
        # (the same as queryid but in a nested statement)
        put("nested_queryid", b"\x00" if nqid == qid else varint(qids(nqid) + 1))
        put("blockers", varint(0 if blockers == "\\N" else int(blockers) + 1))
        put("blockerpid", opt(None if blockerpid == "\\N" else int(blockerpid) - int(pid)))
        put("blocker_state", varint(blstates(blstate)))
        put("blocking_pids", b"" if blpids == "\\N" else blpids.encode())
        put("blocking_pids", b"\x00")
        put("blocker_usesysid", varint(0 if blusesysid == "\\N" else int(blusesysid)))
        prev, last_sid = session, sid
    last_t, last_id, last_base = 0, 0, 0
    for sid in sorted(samples):
        t, weight, period = samples[sid]
        put("sample (id, time, weight, smallest xid)",
            signed(sid - last_id) + signed(t - last_t)
            + weight.encode() + b"\x00" + period.encode() + b"\x00"
            + signed(xid_base.get(sid, last_base) - last_base))
        last_t, last_id, last_base = t, sid, xid_base.get(sid, last_base)

    sizes = {k: len(lzma.compress(bytes(v), format=lzma.FORMAT_RAW, filters=FILTERS))
             for k, v in streams.items()}
    for k in [k for k in sizes if k.endswith("'")]:
        alt = sizes.pop(k)
        if alt < sizes[k[:-1]]:
            sizes[k[:-1] + " (from the session's previous row)"] = alt
            del sizes[k[:-1]]
    return {"rows": len(rows), "samples": len(samples), "sizes": sizes}


def markdown(res):
    """The floor as a Markdown table, by column, largest first."""
    nrows, nsamples, sizes = res["rows"], res["samples"], res["sizes"]
    total = sum(sizes.values())
    out = [f"{nrows:,} rows in {nsamples} samples ({nrows / nsamples:.1f} rows a sample)", "",
           "| column (xz -9e, raw) | bytes | B a row | B a sample |", "|---|---|---|---|"]
    for k, v in sorted(sizes.items(), key=lambda kv: -kv[1]):
        out.append(f"| {k} | {v:,} | {v / nrows:.2f} | {v / nsamples:.1f} |")
    out.append(f"| **all** | {total:,} | **{total / nrows:.2f}** | **{total / nsamples:.1f}** |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--psql", required=True,
                    help="the psql command line of the cluster (quoted)")
    ap.add_argument("--from", dest="lo", type=float, help="epoch seconds")
    ap.add_argument("--to", dest="hi", type=float, help="epoch seconds")
    ap.add_argument("--json")
    a = ap.parse_args()
    res = measure(shlex.split(a.psql), a.lo, a.hi)
    if res is None:
        sys.exit("no archived rows")
    print("\n".join(markdown(res)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
