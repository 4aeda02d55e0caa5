-- Synthetic archive for the report benchmarks (bench/REPORT.md): :days days
-- from 2021-03-01 UTC, one sample a second (keep_one_in 1, weight 1), 50
-- active sessions in each: 20 on CPU, 15 on IO:DataFileRead, 10 on
-- Lock:transactionid (behind session 1), 5 on LWLock:WALWrite; 10
-- statements; and the rollups the archiver would have written with them
-- (per minute and per hour, with the time observed), from those rows.
-- Run as superuser:  psql -v days=1 -f bench/report_data.sql
\set ON_ERROR_STOP on
INSERT INTO pgsentinel_archive_wait_event VALUES
    (8001, 'CPU', 'CPU'), (8002, 'IO', 'DataFileRead'),
    (8003, 'Lock', 'transactionid'), (8004, 'LWLock', 'WALWrite')
ON CONFLICT DO NOTHING;
SELECT format('CREATE TABLE IF NOT EXISTS bench_s_%1$s PARTITION OF pgsentinel_archive_sample FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_a_%1$s PARTITION OF pgsentinel_archive_activity FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_se_%1$s PARTITION OF pgsentinel_archive_session FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_t_%1$s PARTITION OF pgsentinel_archive_text FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_rm_%1$s PARTITION OF pgsentinel_rollup_minute FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_om_%1$s PARTITION OF pgsentinel_rollup_minute_observed FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_sm_%1$s PARTITION OF pgsentinel_rollup_session_minute FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_bm_%1$s PARTITION OF pgsentinel_rollup_blocking_minute FOR VALUES FROM (%2$L) TO (%3$L);',
              to_char(d, 'YYYYMMDD'), d::date, (d + interval '1 day')::date)
FROM generate_series(timestamptz '2021-03-01 00:00+00', timestamptz '2021-03-01 00:00+00' + (:days - 1) * interval '1 day', interval '1 day') d
\gexec
SELECT format('CREATE TABLE IF NOT EXISTS bench_rh_%1$s PARTITION OF pgsentinel_rollup_hour FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_oh_%1$s PARTITION OF pgsentinel_rollup_hour_observed FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_sh_%1$s PARTITION OF pgsentinel_rollup_session_hour FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_bh_%1$s PARTITION OF pgsentinel_rollup_blocking_hour FOR VALUES FROM (%2$L) TO (%3$L);',
              to_char(m, 'YYYYMM'), m, m + interval '1 month')
FROM (SELECT DISTINCT date_trunc('month', d, 'UTC') AS m
        FROM generate_series(timestamptz '2021-03-01 00:00+00', timestamptz '2021-03-01 00:00+00' + (:days - 1) * interval '1 day', interval '1 day') d) x
\gexec
INSERT INTO pgsentinel_archive_text
SELECT d::date, q, q, format('SELECT /* bench statement %s */ * FROM t%s WHERE id = $1', q, q)
FROM generate_series(timestamptz '2021-03-01 00:00+00', timestamptz '2021-03-01 00:00+00' + (:days - 1) * interval '1 day', interval '1 day') d,
     generate_series(1, 10) q;
INSERT INTO pgsentinel_archive_session
    (day, session_id, hash, datid, datname, pid, usesysid, usename,
     application_name, client_addr, backend_start, backend_type)
SELECT d::date, s, s, 1, 'bench', 10000 + s, 10, 'app' || (s % 3), 'web' || (s % 4),
       '10.0.0.' || s || '/32', d, 'client backend'
FROM generate_series(timestamptz '2021-03-01 00:00+00', timestamptz '2021-03-01 00:00+00' + (:days - 1) * interval '1 day', interval '1 day') d,
     generate_series(1, 50) s;
INSERT INTO pgsentinel_archive_activity
    (day, activity_id, hash, session_id, state, top_level_query_id, query_id,
     cmdtype, queryid)
SELECT d::date, s, s, s, 'active', 1 + s % 10, 1 + s % 10, 'SELECT', 1000 + s % 10
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
-- The rollups, as the archiver sums the same rows (src/archive/archive_step.c).
INSERT INTO pgsentinel_rollup_minute (bucket, datname, usesysid, usename,
       application_name, backend_type, wait_event_type, wait_event, queryid,
       db_time, rows)
SELECT date_trunc('minute', s.sample_time, 'UTC'), a.datname, a.usesysid, a.usename,
       a.application_name, a.backend_type, w.wait_event_type, w.wait_event,
       a.queryid, sum(s.weight), count(*)
FROM pgsentinel_archive_sample s
CROSS JOIN LATERAL unnest(s.activity_ids, s.wait_event_ids) AS u(activity_id, wait_event_id)
JOIN (SELECT x.*, se.datid, se.datname, se.pid, se.usesysid, se.usename,
             se.application_name, se.client_addr, se.backend_type
        FROM pgsentinel_archive_activity x
        JOIN pgsentinel_archive_session se
          ON se.day = x.day AND se.session_id = x.session_id) a
  ON a.day = timezone('UTC', s.sample_time)::date AND a.activity_id = u.activity_id
LEFT JOIN pgsentinel_archive_wait_event w ON w.wait_event_id = u.wait_event_id
WHERE s.sample_time >= '2021-03-01 00:00+00'
  AND s.sample_time < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
INSERT INTO pgsentinel_rollup_hour (bucket, datname, usesysid, usename,
       application_name, backend_type, wait_event_type, wait_event, queryid,
       db_time, rows)
SELECT date_trunc('hour', bucket, 'UTC'), datname, usesysid, usename,
       application_name, backend_type, wait_event_type, wait_event, queryid,
       sum(db_time), sum(rows)
FROM pgsentinel_rollup_minute
WHERE bucket >= '2021-03-01 00:00+00'
  AND bucket < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
INSERT INTO pgsentinel_rollup_session_minute (bucket, pid, datname, usesysid,
       usename, application_name, client_addr, backend_type, wait_event_type,
       wait_event, db_time, rows, last_time)
SELECT date_trunc('minute', s.sample_time, 'UTC'), a.pid, a.datname, a.usesysid,
       a.usename, a.application_name, a.client_addr, a.backend_type,
       w.wait_event_type, w.wait_event, sum(s.weight), count(*), max(s.sample_time)
FROM pgsentinel_archive_sample s
CROSS JOIN LATERAL unnest(s.activity_ids, s.wait_event_ids) AS u(activity_id, wait_event_id)
JOIN (SELECT x.*, se.datid, se.datname, se.pid, se.usesysid, se.usename,
             se.application_name, se.client_addr, se.backend_type
        FROM pgsentinel_archive_activity x
        JOIN pgsentinel_archive_session se
          ON se.day = x.day AND se.session_id = x.session_id) a
  ON a.day = timezone('UTC', s.sample_time)::date AND a.activity_id = u.activity_id
LEFT JOIN pgsentinel_archive_wait_event w ON w.wait_event_id = u.wait_event_id
WHERE s.sample_time >= '2021-03-01 00:00+00'
  AND s.sample_time < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;
INSERT INTO pgsentinel_rollup_session_hour (bucket, pid, datname, usesysid,
       usename, application_name, client_addr, backend_type, wait_event_type,
       wait_event, db_time, rows, last_time)
SELECT date_trunc('hour', bucket, 'UTC'), pid, datname, usesysid, usename,
       application_name, client_addr, backend_type, wait_event_type,
       wait_event, sum(db_time), sum(rows), max(last_time)
FROM pgsentinel_rollup_session_minute
WHERE bucket >= '2021-03-01 00:00+00'
  AND bucket < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;
-- The blocking trees' parts by hour and by minute, an hour's rows at a
-- time (the archiver computes them with the same function, a step's
-- samples at a time).
SELECT format($q$
WITH j AS MATERIALIZED (
    SELECT jsonb_agg(jsonb_build_object(
               'ash_time', x.ash_time, 'sample_id', x.sample_id, 'pid', x.pid,
               'weight', x.weight, 'usesysid', x.usesysid, 'usename', x.usename,
               'application_name', x.application_name, 'client_addr', x.client_addr,
               'xact_start', x.xact_start, 'state', x.state, 'wait_event_type', x.wait_event_type,
               'wait_event', x.wait_event, 'query', x.top_level_query,
               'blocking', CASE WHEN cardinality(x.blocking_pids) > 0 THEN x.blocking_pids
                                WHEN x.blockerpid IS NOT NULL THEN ARRAY[x.blockerpid] END,
               'blockerpid', x.blockerpid, 'blocker_state', x.blocker_state,
               'blocker_usesysid', x.blocker_usesysid)) AS rows
    FROM pgsentinel_ash_archive x
    WHERE x.blocked_sample AND x.ash_time >= %1$L AND x.ash_time < %2$L
), h AS (
    INSERT INTO pgsentinel_rollup_blocking_hour
    SELECT b.* FROM j, pgsentinel_blocking_parts(j.rows, 'hour') b
)
INSERT INTO pgsentinel_rollup_blocking_minute
SELECT b.* FROM j, pgsentinel_blocking_parts(j.rows, 'minute') b$q$,
              h, h + interval '1 hour')
FROM generate_series(timestamptz '2021-03-01 00:00+00',
                     timestamptz '2021-03-01 00:00+00' + :days * interval '1 day' - interval '1 hour',
                     interval '1 hour') h
\gexec
INSERT INTO pgsentinel_rollup_minute_observed (bucket, samples, observed, peak)
SELECT date_trunc('minute', s.sample_time, 'UTC'), count(*), sum(s.weight), max(s.active_sessions)
FROM pgsentinel_archive_sample s
WHERE s.sample_time >= '2021-03-01 00:00+00'
  AND s.sample_time < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1;
INSERT INTO pgsentinel_rollup_hour_observed (bucket, samples, observed, peak)
SELECT date_trunc('hour', bucket, 'UTC'), sum(samples), sum(observed), max(peak)
FROM pgsentinel_rollup_minute_observed
WHERE bucket >= '2021-03-01 00:00+00'
  AND bucket < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1;
VACUUM ANALYZE pgsentinel_archive_sample, pgsentinel_archive_session, pgsentinel_archive_activity, pgsentinel_archive_text,
    pgsentinel_rollup_minute, pgsentinel_rollup_hour,
    pgsentinel_rollup_minute_observed, pgsentinel_rollup_hour_observed,
    pgsentinel_rollup_session_hour, pgsentinel_rollup_blocking_hour,
    pgsentinel_rollup_session_minute, pgsentinel_rollup_blocking_minute;
