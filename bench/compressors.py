#!/usr/bin/env python3
"""Which compressor for the archive's batch payloads: sizes, measured.

    python3 bench/compressors.py ROWDATA_FILE

ROWDATA_FILE: lines "samples|hex of row_data" of pgsentinel_archive_batch, e.g.
    psql -Atc "SELECT cardinality((pgsentinel_batch_samples(sample_data)).sample_ids),
                      encode(row_data, 'hex')
               FROM pgsentinel_archive_batch"
of a server archiving a workload (one sample a second, keep_one_in 1).  Each
payload's body (src/archive/batch_format.c) is expanded and compressed again by zstd at several levels, zstd with a dictionary
trained on the first half of the batches (measured on the second half),
lz4 and zlib; prints bytes per sample of each, next to the payloads as
stored, and each column's bytes alone.  Needs the Python modules zstandard
and lz4.
"""
import sys
import zlib

import lz4.frame
import zstandard


def varint(b, i):
    u = 0
    shift = 0
    while True:
        c = b[i]
        i += 1
        u |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return u, i


def pglz_decompress(src, rawsize):
    dst = bytearray()
    i = 0
    while i < len(src) and len(dst) < rawsize:
        ctrl = src[i]
        i += 1
        for _ in range(8):
            if i >= len(src) or len(dst) >= rawsize:
                break
            if ctrl & 1:
                length = (src[i] & 0x0F) + 3
                off = ((src[i] & 0xF0) << 4) | src[i + 1]
                i += 2
                if length == 18:
                    length += src[i]
                    i += 1
                for _ in range(length):
                    dst.append(dst[-off])
            else:
                dst.append(src[i])
                i += 1
            ctrl >>= 1
    return bytes(dst)


def body(payload):
    """The body of a payload: stored (0), zstd (2), or pglz (1: what the
    first build of the format wrote, which the measure below chose against)."""
    assert payload[0] == 1, 'format 1 only'
    method = payload[1]
    raw, i = varint(payload, 2)
    if method == 0:
        return payload[i:]
    if method == 2:
        return zstandard.ZstdDecompressor().decompress(payload[i:], max_output_size=raw)
    return pglz_decompress(payload[i:], raw)


COLUMNS = ['row_samples', 'session_ids', 'wait_event_ids', 'states', 'xact_us',
           'query_us', 'change_us', 'backend_xids', 'backend_xmins',
           'top_level_query_ids', 'top_level_query_values', 'query_ids',
           'query_values', 'cmdtypes', 'queryids', 'nested_queryids', 'blockers',
           'blockerpids', 'blocker_states', 'blocker_usesysids', 'blocking_pids',
           'lock_types', 'lock_relations', 'lock_targets', 'lock_modes',
           'blocker_lock_modes', 'nested_is_queryid']


def columns(b):
    """The bytes of each column of a body."""
    n, i = varint(b, 0)
    out = []
    for _ in range(n):
        i += 1
        length, i = varint(b, i)
        out.append(b[i:i + length])
        i += length
    return out


def main():
    batches = []
    for line in open(sys.argv[1]):
        samples, hexdata = line.strip().split('|')
        p = bytes.fromhex(hexdata)
        batches.append((int(samples), p, body(p)))
    half = len(batches) // 2
    samples = sum(b[0] for b in batches)
    results = {}
    results['payload as stored'] = sum(len(b[1]) for b in batches)
    results['body, uncompressed'] = sum(len(b[2]) for b in batches)
    for level in (1, 3, 9, 19):
        c = zstandard.ZstdCompressor(level=level)
        results['zstd -%d' % level] = sum(len(c.compress(b[2])) + 3 for b in batches)
    results['lz4'] = sum(len(lz4.frame.compress(b[2])) + 3 for b in batches)
    results['zlib -6'] = sum(len(zlib.compress(b[2], 6)) + 3 for b in batches)
    # a dictionary trained on the first half, measured on the second
    if half >= 8:
        d = zstandard.train_dictionary(16384, [b[2] for b in batches[:half]])
        c = zstandard.ZstdCompressor(level=3, dict_data=d)
        second = batches[half:]
        s2 = sum(b[0] for b in second)
        nodict = zstandard.ZstdCompressor(level=3)
        print('second half: zstd -3 %.1f B/sample, with a 16 kB dictionary %.1f B/sample'
              % (sum(len(nodict.compress(b[2])) for b in second) / s2,
                 sum(len(c.compress(b[2])) for b in second) / s2))
    print('%d batches, %d samples' % (len(batches), samples))
    print('| column | bytes a sample | zstd -19 alone |')
    print('|---|---:|---:|')
    c19 = zstandard.ZstdCompressor(level=19)
    ncols = min(len(columns(b[2])) for b in batches)
    for k, name in enumerate(COLUMNS[:ncols]):
        raw = sum(len(columns(b[2])[k]) for b in batches)
        z = sum(len(c19.compress(columns(b[2])[k])) for b in batches)
        print('| %s | %.1f | %.1f |' % (name, raw / samples, z / samples))
    print('| payload | bytes a sample | vs as stored |')
    print('|---|---:|---:|')
    base = results['payload as stored']
    for k, v in results.items():
        print('| %s | %.1f | %.2f |' % (k, v / samples, v / base))


if __name__ == '__main__':
    main()
