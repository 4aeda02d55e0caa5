-- Synthetic archive for the report benchmarks (bench/REPORT.md): :days days
-- from 2021-03-01 UTC, one sample a second (keep_one_in 1, weight 1), 50
-- active sessions in each: 20 on CPU, 15 on IO:DataFileRead, 10 on
-- Lock:transactionid (behind session 1), 5 on LWLock:WALWrite; 10
-- statements.  Run as superuser:  psql -v days=1 -f bench/report_data.sql
\set ON_ERROR_STOP on
INSERT INTO pgsentinel_archive_wait_event VALUES
    (8001, 'CPU', 'CPU'), (8002, 'IO', 'DataFileRead'),
    (8003, 'Lock', 'transactionid'), (8004, 'LWLock', 'WALWrite')
ON CONFLICT DO NOTHING;
SELECT format('CREATE TABLE IF NOT EXISTS bench_s_%1$s PARTITION OF pgsentinel_archive_sample FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_a_%1$s PARTITION OF pgsentinel_archive_activity FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_t_%1$s PARTITION OF pgsentinel_archive_text FOR VALUES FROM (%2$L) TO (%3$L);',
              to_char(d, 'YYYYMMDD'), d::date, (d + interval '1 day')::date)
FROM generate_series(timestamptz '2021-03-01 00:00+00', timestamptz '2021-03-01 00:00+00' + (:days - 1) * interval '1 day', interval '1 day') d
\gexec
INSERT INTO pgsentinel_archive_text
SELECT d::date, q, q, format('SELECT /* bench statement %s */ * FROM t%s WHERE id = $1', q, q)
FROM generate_series(timestamptz '2021-03-01 00:00+00', timestamptz '2021-03-01 00:00+00' + (:days - 1) * interval '1 day', interval '1 day') d,
     generate_series(1, 10) q;
INSERT INTO pgsentinel_archive_activity
    (day, activity_id, hash, datid, datname, pid, usesysid, usename,
     application_name, client_addr, backend_start, state, top_level_query_id,
     query_id, cmdtype, queryid, backend_type)
SELECT d::date, s, s, 1, 'bench', 10000 + s, 10, 'app' || (s % 3), 'web' || (s % 4),
       '10.0.0.' || s || '/32', d, 'active', 1 + s % 10, 1 + s % 10, 'SELECT',
       1000 + s % 10, 'client backend'
FROM generate_series(timestamptz '2021-03-01 00:00+00', timestamptz '2021-03-01 00:00+00' + (:days - 1) * interval '1 day', interval '1 day') d,
     generate_series(1, 50) s;
INSERT INTO pgsentinel_archive_sample
SELECT t, 5000000 + extract(epoch FROM t - '2021-03-01 00:00+00')::bigint, 1, 1, 50,
       (SELECT array_agg(s ORDER BY s) FROM generate_series(1, 50) s),
       (SELECT array_agg(CASE WHEN s <= 20 THEN 8001 WHEN s <= 35 THEN 8002
                              WHEN s <= 45 THEN 8003 ELSE 8004 END ORDER BY s)
          FROM generate_series(1, 50) s),
       (SELECT array_agg(CASE WHEN s BETWEEN 36 AND 45 THEN 1 ELSE 0 END ORDER BY s) FROM generate_series(1, 50) s),
       (SELECT array_agg(CASE WHEN s BETWEEN 36 AND 45 THEN 10001 END ORDER BY s) FROM generate_series(1, 50) s),
       (SELECT array_agg(CASE WHEN s BETWEEN 36 AND 45 THEN 'active' END ORDER BY s) FROM generate_series(1, 50) s),
       (SELECT array_agg(CASE WHEN s BETWEEN 36 AND 45 THEN 10::oid END ORDER BY s) FROM generate_series(1, 50) s),
       (SELECT array_agg(CASE WHEN s BETWEEN 36 AND 45 THEN '{10001}' ELSE '{}' END ORDER BY s) FROM generate_series(1, 50) s)
FROM generate_series(timestamptz '2021-03-01 00:00+00',
                     timestamptz '2021-03-01 00:00+00' + :days * interval '1 day' - interval '1 second',
                     interval '1 second') t;
ANALYZE pgsentinel_archive_sample, pgsentinel_archive_activity, pgsentinel_archive_text;
