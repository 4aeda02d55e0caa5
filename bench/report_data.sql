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
SELECT format('CREATE TABLE IF NOT EXISTS bench_b_%1$s PARTITION OF pgsentinel_archive_batch FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_se_%1$s PARTITION OF pgsentinel_archive_session FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_t_%1$s PARTITION OF pgsentinel_archive_text FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_rm_%1$s PARTITION OF pgsentinel_rollup_minute_batch FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_om_%1$s PARTITION OF pgsentinel_rollup_minute_observed FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_sm_%1$s PARTITION OF pgsentinel_rollup_session_minute_batch FOR VALUES FROM (%2$L) TO (%3$L);
               CREATE TABLE IF NOT EXISTS bench_bm_%1$s PARTITION OF pgsentinel_rollup_blocking_minute_batch FOR VALUES FROM (%2$L) TO (%3$L);',
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
-- The samples are written first as one row each with its rows as arrays
-- of activities (bench_old_sample, bench_old_activity), then stored as the
-- archive's batches, one a minute.
CREATE TEMP TABLE bench_old_sample (sample_time timestamptz, sample_id bigint,
    sample_period float8, weight float8, active_sessions int, activity_ids int[],
    wait_event_ids int[], blockers int[], blockerpids int[], blocker_states text[],
    blocker_usesysids oid[], blocking_pids text[]);
CREATE TEMP TABLE bench_old_activity (day date, activity_id int, hash bigint,
    session_id int, xact_start timestamptz, query_start timestamptz,
    state_change timestamptz, state text, backend_xid xid, backend_xmin xid,
    top_level_query_id int, top_level_query_values text, query_id int,
    query_values text, cmdtype text, queryid bigint, nested_queryid bigint);
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
INSERT INTO bench_old_activity
    (day, activity_id, hash, session_id, state, top_level_query_id, query_id,
     cmdtype, queryid)
SELECT d::date, s, s, s, 'active', 1 + s % 10, 1 + s % 10, 'SELECT', 1000 + s % 10
FROM generate_series(timestamptz '2021-03-01 00:00+00', timestamptz '2021-03-01 00:00+00' + (:days - 1) * interval '1 day', interval '1 day') d,
     generate_series(1, 50) s;
INSERT INTO bench_old_sample
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
INSERT INTO pgsentinel_archive_batch (first_time, last_time, sample_data, row_data)
SELECT b.first_time, b.last_time,
       pgsentinel_sample_pack(b.sample_ids, b.sample_us, b.sample_periods, b.weights,
                              b.active_sessions, b.sample_blocked),
       pgsentinel_batch_pack(r.row_samples, r.session_ids,
       r.wait_event_ids, r.states, r.xact_us, r.query_us, r.change_us, r.backend_xids,
       r.backend_xmins, r.top_level_query_ids, r.top_level_query_values, r.query_ids,
       r.query_values, r.cmdtypes, r.queryids, r.nested_queryids, r.blockers,
       r.blockerpids, r.blocker_states, r.blocker_usesysids, r.blocking_pids)
  FROM (SELECT date_trunc('minute', s.sample_time, 'UTC') AS m,
               min(s.sample_time) AS first_time, max(s.sample_time) AS last_time,
               array_agg(s.sample_id ORDER BY s.sample_time) AS sample_ids,
               array_agg(pgsentinel_us_between(date_trunc('minute', s.sample_time, 'UTC'),
                                               s.sample_time) ORDER BY s.sample_time) AS sample_us,
               array_agg(s.sample_period ORDER BY s.sample_time) AS sample_periods,
               array_agg(s.weight ORDER BY s.sample_time) AS weights,
               array_agg(s.active_sessions ORDER BY s.sample_time) AS active_sessions,
               array_agg(s.blockers IS NOT NULL ORDER BY s.sample_time) AS sample_blocked
          FROM bench_old_sample s GROUP BY 1) b
  JOIN (SELECT x.m, pgsentinel_pack(array_agg(x.si ORDER BY x.session_id, x.si)),
               pgsentinel_pack(array_agg(x.session_id ORDER BY x.session_id, x.si)),
               pgsentinel_pack(array_agg(x.w ORDER BY x.session_id, x.si)),
               array_agg(x.state ORDER BY x.session_id, x.si),
               pgsentinel_pack(array_agg(NULL::int8)), pgsentinel_pack(array_agg(NULL::int8)),
               pgsentinel_pack(array_agg(NULL::int8)),
               pgsentinel_pack(array_agg(NULL::xid)), pgsentinel_pack(array_agg(NULL::xid)),
               pgsentinel_pack(array_agg(x.top_level_query_id ORDER BY x.session_id, x.si)),
               array_agg(NULL::text),
               pgsentinel_pack(array_agg(x.query_id ORDER BY x.session_id, x.si)),
               array_agg(NULL::text),
               array_agg(x.cmdtype ORDER BY x.session_id, x.si),
               array_agg(x.queryid ORDER BY x.session_id, x.si),
               array_agg(NULL::int8),
               pgsentinel_pack(array_agg(x.blocker ORDER BY x.session_id, x.si)),
               pgsentinel_pack(array_agg(x.blockerpid ORDER BY x.session_id, x.si)),
               array_agg(x.blocker_state ORDER BY x.session_id, x.si),
               array_agg(x.blocker_usesysid ORDER BY x.session_id, x.si),
               array_agg(x.blocking_pids ORDER BY x.session_id, x.si)
          FROM (SELECT date_trunc('minute', s.sample_time, 'UTC') AS m,
                       row_number() OVER (PARTITION BY date_trunc('minute', s.sample_time, 'UTC')
                                          ORDER BY s.sample_time)::int AS si,
                       s.sample_time, s.activity_ids, s.wait_event_ids, s.blockers,
                       s.blockerpids, s.blocker_states, s.blocker_usesysids, s.blocking_pids
                  FROM bench_old_sample s) s
         CROSS JOIN LATERAL unnest(s.activity_ids, s.wait_event_ids, s.blockers,
                                   s.blockerpids, s.blocker_states,
                                   s.blocker_usesysids, s.blocking_pids)
               AS u(a, w, blocker, blockerpid, blocker_state, blocker_usesysid, blocking_pids)
          JOIN bench_old_activity a
            ON a.day = timezone('UTC', s.sample_time)::date AND a.activity_id = u.a,
               LATERAL (SELECT s.m, s.si, a.session_id, u.w, a.state, a.top_level_query_id,
                               a.query_id, a.cmdtype, a.queryid, u.blocker, u.blockerpid,
                               u.blocker_state, u.blocker_usesysid, u.blocking_pids) x
         GROUP BY x.m) r(m, row_samples, session_ids, wait_event_ids, states, xact_us,
                         query_us, change_us, backend_xids, backend_xmins,
                         top_level_query_ids, top_level_query_values, query_ids,
                         query_values, cmdtypes, queryids, nested_queryids, blockers,
                         blockerpids, blocker_states, blocker_usesysids, blocking_pids)
    ON r.m = b.m;
-- The rollups, as the archiver sums the same rows (src/archive/archive_step.c),
-- a minute's rows as one batch.
INSERT INTO pgsentinel_rollup_minute_batch
SELECT r.bucket, pgsentinel_minute_pack(array_agg(r.datname), array_agg(r.usesysid), array_agg(r.usename),
       array_agg(r.application_name), array_agg(r.backend_type),
       array_agg(r.wait_event_type), array_agg(r.wait_event), array_agg(r.queryid),
       array_agg(r.db_time), array_agg(r.rows))
FROM (
SELECT date_trunc('minute', s.sample_time, 'UTC') AS bucket, a.datname, a.usesysid, a.usename,
       a.application_name, a.backend_type, w.wait_event_type, w.wait_event,
       a.queryid, sum(s.weight) AS db_time, count(*) AS rows
FROM bench_old_sample s
CROSS JOIN LATERAL unnest(s.activity_ids, s.wait_event_ids) AS u(activity_id, wait_event_id)
JOIN (SELECT x.*, se.datid, se.datname, se.pid, se.usesysid, se.usename,
             se.application_name, se.client_addr, se.backend_type
        FROM bench_old_activity x
        JOIN pgsentinel_archive_session se
          ON se.day = x.day AND se.session_id = x.session_id) a
  ON a.day = timezone('UTC', s.sample_time)::date AND a.activity_id = u.activity_id
LEFT JOIN pgsentinel_archive_wait_event w ON w.wait_event_id = u.wait_event_id
WHERE s.sample_time >= '2021-03-01 00:00+00'
  AND s.sample_time < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9) r
GROUP BY r.bucket;
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
INSERT INTO pgsentinel_rollup_session_minute_batch
SELECT r.bucket, pgsentinel_session_minute_pack(array_agg(r.pid), array_agg(r.datname), array_agg(r.usesysid),
       array_agg(r.usename), array_agg(r.application_name), array_agg(r.client_addr),
       array_agg(r.backend_type), array_agg(r.wait_event_type), array_agg(r.wait_event),
       array_agg(r.db_time), array_agg(r.rows), array_agg(r.last_time))
FROM (
SELECT date_trunc('minute', s.sample_time, 'UTC') AS bucket, a.pid, a.datname, a.usesysid,
       a.usename, a.application_name, a.client_addr, a.backend_type,
       w.wait_event_type, w.wait_event, sum(s.weight) AS db_time, count(*) AS rows,
       max(s.sample_time) AS last_time
FROM bench_old_sample s
CROSS JOIN LATERAL unnest(s.activity_ids, s.wait_event_ids) AS u(activity_id, wait_event_id)
JOIN (SELECT x.*, se.datid, se.datname, se.pid, se.usesysid, se.usename,
             se.application_name, se.client_addr, se.backend_type
        FROM bench_old_activity x
        JOIN pgsentinel_archive_session se
          ON se.day = x.day AND se.session_id = x.session_id) a
  ON a.day = timezone('UTC', s.sample_time)::date AND a.activity_id = u.activity_id
LEFT JOIN pgsentinel_archive_wait_event w ON w.wait_event_id = u.wait_event_id
WHERE s.sample_time >= '2021-03-01 00:00+00'
  AND s.sample_time < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10) r
GROUP BY r.bucket;
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
    FROM pgsentinel_archive_rows_by_batch x
    WHERE x.blocked_sample AND x.ash_time >= %1$L AND x.ash_time < %2$L
      AND x.batch_start >= %1$L AND x.batch_start < %2$L
), h AS (
    INSERT INTO pgsentinel_rollup_blocking_hour
    SELECT b.* FROM j, pgsentinel_blocking_parts(j.rows, 'hour') b
)
INSERT INTO pgsentinel_rollup_blocking_minute_batch
SELECT b.bucket, pgsentinel_blocking_minute_pack(
       array_agg(b.kind), array_agg(b.root_pid),
       array_agg(b.pid), array_agg(b.key_usesysid),
       array_agg(b.depth), array_agg(b.blocked_by::text),
       array_agg(b.samples), array_agg(b.db_time),
       array_agg(b.last_time),
       array_agg(b.usesysid), array_agg(b.usename), array_agg(b.state),
       array_agg(b.wait_event_type), array_agg(b.wait_event), array_agg(b.query),
       array_agg(b.first_time),
       array_agg(b.application_name), array_agg(b.client_addr),
       array_agg(b.xact_start), array_agg(b.lock), array_agg(b.lock_mode),
       array_agg(b.blocker_lock_modes))
FROM j, pgsentinel_blocking_parts(j.rows, 'minute') b GROUP BY b.bucket$q$,
              h, h + interval '1 hour')
FROM generate_series(timestamptz '2021-03-01 00:00+00',
                     timestamptz '2021-03-01 00:00+00' + :days * interval '1 day' - interval '1 hour',
                     interval '1 hour') h
\gexec
INSERT INTO pgsentinel_rollup_minute_observed (bucket, samples, observed, peak)
SELECT date_trunc('minute', s.sample_time, 'UTC'), count(*), sum(s.weight), max(s.active_sessions)
FROM bench_old_sample s
WHERE s.sample_time >= '2021-03-01 00:00+00'
  AND s.sample_time < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1;
INSERT INTO pgsentinel_rollup_hour_observed (bucket, samples, observed, peak)
SELECT date_trunc('hour', bucket, 'UTC'), sum(samples), sum(observed), max(peak)
FROM pgsentinel_rollup_minute_observed
WHERE bucket >= '2021-03-01 00:00+00'
  AND bucket < timestamptz '2021-03-01 00:00+00' + :days * interval '1 day'
GROUP BY 1;
VACUUM ANALYZE pgsentinel_archive_batch, pgsentinel_archive_session, pgsentinel_archive_text,
    pgsentinel_rollup_minute_batch, pgsentinel_rollup_hour,
    pgsentinel_rollup_minute_observed, pgsentinel_rollup_hour_observed,
    pgsentinel_rollup_session_hour, pgsentinel_rollup_blocking_hour,
    pgsentinel_rollup_session_minute_batch, pgsentinel_rollup_blocking_minute_batch;
