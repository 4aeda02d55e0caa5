--
-- The reports (docs/reports.md) over synthetic archive rows of 2020-01-01
-- (UTC), far older than anything in the ring, with hand-computed results.
--
-- 10:00:00-10:00:20  20 samples every second (weight 1); 10 of them empty.
--   pid 101 (alice, web)  CPU in the 10 first samples
--   pid 102 (bob, batch)  IO:DataFileRead in the 5 first
--   pid 103 (carol)       idle in transaction (Client:ClientRead), 10:00:05-09,
--                         sampled because she holds the lock that
--   pid 104 (bob)         waits for (Lock:transactionid) 10:00:05-09, and
--   pid 105 (dave)        waits behind 104, 10:00:07-09 (pg_blocking_pids()
--                         lists 104 twice: soft and hard)
-- 10:00:20-10:00:40  the sampling period changed to 5 s: 4 samples, pid 101
--                    on CPU in each (weight 5)
-- 10:00:40-10:01:00  keep_one_in 10 (period 1 s): 2 samples kept, weight 10,
--                    pid 101 CPU and pid 102 IO in both
-- 10:01:00-10:02:00  the sampler was stopped: no sample at all
--
-- So over 10:00-10:02: observed 60 s of 120 (coverage 0.5); DB time 83 s:
-- CPU 10+20+20 = 50, IO 5+20 = 25, Lock 5+3 = 8; aas 83/60.  Carol's rows
-- are not load: an idle session is sampled only to name it as a blocker.
--
SET timezone = 'UTC';
SET datestyle = 'ISO, YMD';
SET extra_float_digits = 0;

-- The rollups are read before the archiver's rolled_until, which its first
-- step sets (the extension may have just been created again).
SELECT pgs_wait_for('(SELECT rolled_until FROM pgsentinel_archive_state) IS NOT NULL');
-- The samples and their rows are written as samples with arrays of
-- activities (pgs_rep_s, pgs_rep_a), then stored as the archive's batches
-- (pgs_rep_b), one per sample.
CREATE TABLE pgs_rep_s (sample_time timestamptz, sample_id bigint,
    sample_period float8, weight float8, active_sessions int, activity_ids int[],
    wait_event_ids int[], blockers int[], blockerpids int[], blocker_states text[],
    blocker_usesysids oid[], blocking_pids text[]);
CREATE TABLE pgs_rep_a (day date, activity_id int, hash bigint, session_id int,
    xact_start timestamptz, query_start timestamptz, state_change timestamptz,
    state text, backend_xid xid, backend_xmin xid, top_level_query_id int,
    top_level_query_values text, query_id int, query_values text, cmdtype text,
    queryid bigint, nested_queryid bigint);
CREATE TABLE pgs_rep_b PARTITION OF pgsentinel_archive_batch
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE pgs_rep_se PARTITION OF pgsentinel_archive_session
    FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE pgs_rep_t PARTITION OF pgsentinel_archive_text
    FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE pgs_rep_rm PARTITION OF pgsentinel_rollup_minute_batch
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE pgs_rep_om PARTITION OF pgsentinel_rollup_minute_observed
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE pgs_rep_rh PARTITION OF pgsentinel_rollup_hour
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-02-01 00:00+00');
CREATE TABLE pgs_rep_oh PARTITION OF pgsentinel_rollup_hour_observed
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-02-01 00:00+00');
CREATE TABLE pgs_rep_sh PARTITION OF pgsentinel_rollup_session_hour
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-02-01 00:00+00');
CREATE TABLE pgs_rep_bh PARTITION OF pgsentinel_rollup_blocking_hour
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-02-01 00:00+00');
CREATE TABLE pgs_rep_sm PARTITION OF pgsentinel_rollup_session_minute_batch
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE pgs_rep_bm PARTITION OF pgsentinel_rollup_blocking_minute_batch
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
INSERT INTO pgsentinel_archive_wait_event VALUES
    (9001, 'CPU', 'CPU'), (9002, 'IO', 'DataFileRead'),
    (9003, 'Lock', 'transactionid'), (9004, 'Client', 'ClientRead')
ON CONFLICT DO NOTHING;
-- The archiver of this server may have named some of them first: the rows
-- below say 9001..9004 and are mapped to the ids the table holds.
CREATE TEMP TABLE pgs_rep_we AS
SELECT v.code, w.wait_event_id
FROM (VALUES (9001, 'CPU', 'CPU'), (9002, 'IO', 'DataFileRead'),
             (9003, 'Lock', 'transactionid'), (9004, 'Client', 'ClientRead'))
     AS v(code, t, e)
     JOIN pgsentinel_archive_wait_event w
       ON w.wait_event_type = v.t AND w.wait_event = v.e;
INSERT INTO pgsentinel_archive_text VALUES
    ('2020-01-01', 1, 1, 'SELECT * FROM orders WHERE id = $1'),
    ('2020-01-01', 2, 2, 'SELECT sum(amount) FROM ledger'),
    ('2020-01-01', 3, 3, 'UPDATE accounts SET balance = balance - $1 WHERE id = $2'),
    ('2020-01-01', 4, 4, 'DELETE FROM accounts WHERE id = $1');
-- (activity_id = session_id, pid, user, application, client, state,
-- text = query id)
CREATE TEMP TABLE pgs_rep_act AS
SELECT * FROM (VALUES (1, 101, 'alice', 'web', '10.0.0.1/32', 'active', 1),
             (2, 102, 'bob', 'batch', '10.0.0.2/32', 'active', 2),
             (3, 103, 'carol', 'psql', '10.0.0.3/32', 'idle in transaction', 3),
             (4, 104, 'bob', 'batch', '10.0.0.2/32', 'active', 3),
             (5, 105, 'dave', 'web', '10.0.0.1/32', 'active', 4),
             (6, 106, 'erin', 'web', '10.0.0.1/32', 'active', 3))
     AS v(id, pid, usename, app, client, state, q);
INSERT INTO pgsentinel_archive_session
    (day, session_id, hash, datid, datname, pid, usesysid, usename,
     application_name, client_addr, backend_start, backend_type)
SELECT '2020-01-01', v.id, v.id, 1, 'shop', v.pid, 10, v.usename, v.app,
       v.client, '2020-01-01 09:00+00', 'client backend'
FROM pgs_rep_act v;
INSERT INTO pgs_rep_a
    (day, activity_id, hash, session_id, state, top_level_query_id,
     query_id, cmdtype, queryid)
SELECT '2020-01-01', v.id, v.id, v.id, v.state, v.q, v.q, 'SELECT', v.q * 11
FROM pgs_rep_act v;
-- pgsentinel's archiver (its own backend type), text 2 for a query
INSERT INTO pgsentinel_archive_session
    (day, session_id, hash, datid, datname, pid, usesysid, usename,
     application_name, backend_start, backend_type)
VALUES ('2020-01-01', 7, 7, 1, 'shop', 107, 10, 'postgres', 'pgsentinel archiver',
        '2020-01-01 09:00+00', 'pgsentinel archiver');
INSERT INTO pgs_rep_a
    (day, activity_id, hash, session_id, state, top_level_query_id,
     query_id, cmdtype, queryid)
VALUES ('2020-01-01', 7, 7, 7, 'active', 2, 2, 'INSERT', 77);

-- The rows, then one archive row per sample with the rows as arrays.
CREATE TEMP TABLE pgs_rep_samples (t timestamptz, id bigint, period float8, weight float8);
CREATE TEMP TABLE pgs_rep_rows (t timestamptz, activity int, wait int,
                                blockerpid int, blocker_state text, blocking int[]);
INSERT INTO pgs_rep_samples
SELECT '2020-01-01 10:00:00+00'::timestamptz + i * interval '1 s', 1000 + i, 1, 1
FROM generate_series(0, 19) i
UNION ALL
SELECT '2020-01-01 10:00:20+00'::timestamptz + i * interval '5 s', 1020 + i, 5, 5
FROM generate_series(0, 3) i
UNION ALL
SELECT '2020-01-01 10:00:40+00'::timestamptz + i * interval '10 s', 1030 + i * 10, 1, 10
FROM generate_series(0, 1) i;
INSERT INTO pgs_rep_rows
SELECT t, 1, 9001, NULL::int, NULL::text, NULL::int[] FROM pgs_rep_samples WHERE t < '2020-01-01 10:00:10+00'
UNION ALL
SELECT t, 2, 9002, NULL, NULL, NULL FROM pgs_rep_samples WHERE t < '2020-01-01 10:00:05+00'
UNION ALL
SELECT t, 3, 9004, NULL, NULL, NULL FROM pgs_rep_samples
WHERE t >= '2020-01-01 10:00:05+00' AND t < '2020-01-01 10:00:10+00'
UNION ALL
SELECT t, 4, 9003, 103, 'idle in transaction', '{103}' FROM pgs_rep_samples
WHERE t >= '2020-01-01 10:00:05+00' AND t < '2020-01-01 10:00:10+00'
UNION ALL
SELECT t, 5, 9003, 104, 'active', '{104,104}' FROM pgs_rep_samples
WHERE t >= '2020-01-01 10:00:07+00' AND t < '2020-01-01 10:00:10+00'
UNION ALL
SELECT t, 1, 9001, NULL, NULL, NULL FROM pgs_rep_samples WHERE t >= '2020-01-01 10:00:20+00'
UNION ALL
SELECT t, 2, 9002, NULL, NULL, NULL FROM pgs_rep_samples WHERE t >= '2020-01-01 10:00:40+00';
-- 13:59:30-15:00:30, for the rollups (below): every 10 s until 14:00
-- (weight 10), then keep_one_in 10 at 1 s (weight 10) until 14:30, a 5 s
-- period until 14:45 (every third sample empty), a 30 s period after.
INSERT INTO pgs_rep_samples
SELECT '2020-01-01 13:59:30+00'::timestamptz + i * interval '10 s', 2000 + i, 10, 10
FROM generate_series(0, 2) i
UNION ALL
SELECT '2020-01-01 14:00:00+00'::timestamptz + i * interval '10 s', 3000 + 10 * i, 1, 10
FROM generate_series(0, 179) i
UNION ALL
SELECT '2020-01-01 14:30:00+00'::timestamptz + i * interval '5 s', 5000 + i, 5, 5
FROM generate_series(0, 179) i
UNION ALL
SELECT '2020-01-01 14:45:00+00'::timestamptz + i * interval '30 s', 6000 + i, 30, 30
FROM generate_series(0, 31) i;
INSERT INTO pgs_rep_rows
SELECT t, 1, 9001, NULL::int, NULL::text, NULL::int[] FROM pgs_rep_samples
WHERE t >= '2020-01-01 13:59:30+00' AND extract(second FROM t)::int % 20 = 0
UNION ALL
SELECT t, 2, 9002, NULL, NULL, NULL FROM pgs_rep_samples
WHERE t >= '2020-01-01 13:59:30+00' AND t < '2020-01-01 14:45+00'
  AND (t < '2020-01-01 14:30+00' OR (id - 5000) % 3 <> 2)
UNION ALL
SELECT t, 4, 9003, 103, 'idle in transaction', '{103}' FROM pgs_rep_samples
WHERE t >= '2020-01-01 14:10+00' AND t < '2020-01-01 14:40+00' AND (id - 5000) % 3 <> 2
UNION ALL
SELECT t, 5, 9001, NULL, NULL, NULL FROM pgs_rep_samples
WHERE t >= '2020-01-01 14:45+00';
DELETE FROM pgs_rep_rows r USING pgs_rep_samples s
WHERE r.t = s.t AND s.id BETWEEN 5000 AND 5179 AND (s.id - 5000) % 3 = 2;
-- 16:00:00-16:09:59, for the incidents (below): every second, pid 101 on
-- CPU (normal: 1 active session); 16:03:00-16:04:59 a pile-up behind
-- carol, idle in transaction: 104 (batch) waits for her, 106 (erin, web)
-- for 104, both running the UPDATE (queryid 33); 16:07:00-01 a blip of
-- two samples with 104 and 106 on CPU; 16:08:20-24 pgsentinel's archiver
-- on CPU (not load: no incident, no DB time in the reports).
INSERT INTO pgs_rep_samples
SELECT '2020-01-01 16:00:00+00'::timestamptz + i * interval '1 s', 7000 + i, 1, 1
FROM generate_series(0, 599) i;
INSERT INTO pgs_rep_rows
SELECT t, 1, 9001, NULL::int, NULL::text, NULL::int[] FROM pgs_rep_samples WHERE id >= 7000
UNION ALL
SELECT t, 3, 9004, NULL, NULL, NULL FROM pgs_rep_samples WHERE id BETWEEN 7180 AND 7299
UNION ALL
SELECT t, 4, 9003, 103, 'idle in transaction', '{103}' FROM pgs_rep_samples WHERE id BETWEEN 7180 AND 7299
UNION ALL
SELECT t, 6, 9003, 104, 'active', '{104}' FROM pgs_rep_samples WHERE id BETWEEN 7180 AND 7299
UNION ALL
SELECT t, a, 9001, NULL, NULL, NULL FROM pgs_rep_samples, unnest('{4,6}'::int[]) a
WHERE id BETWEEN 7420 AND 7421
UNION ALL
SELECT t, 7, 9001, NULL, NULL, NULL FROM pgs_rep_samples WHERE id BETWEEN 7500 AND 7504;
-- 17:00-17:10, samples of two weights (the archive keeps one in ten, the
-- ring every one): 17:00-17:05 one sample in 10 s (weight 10), pid 101
-- alone; 17:05-17:10 every second (weight 1), 101, 102 and 106 on CPU.
-- Counted by sample, the three sessions would be the normal (300 samples
-- against 30); by time, one session is, and 17:05-17:10 an incident.
INSERT INTO pgs_rep_samples
SELECT '2020-01-01 17:00:00+00'::timestamptz + i * interval '10 s', 8000 + i * 10, 1, 10
FROM generate_series(0, 29) i
UNION ALL
SELECT '2020-01-01 17:05:00+00'::timestamptz + i * interval '1 s', 8300 + i, 1, 1
FROM generate_series(0, 299) i;
INSERT INTO pgs_rep_rows
SELECT t, a, 9001, NULL::int, NULL::text, NULL::int[]
FROM pgs_rep_samples, unnest(CASE WHEN id < 8300 THEN '{1}'::int[] ELSE '{1,2,6}' END) a
WHERE id BETWEEN 8000 AND 8599;
UPDATE pgs_rep_rows r SET wait = m.wait_event_id FROM pgs_rep_we m WHERE r.wait = m.code;
INSERT INTO pgs_rep_s
SELECT s.t, s.id, s.period, s.weight,
       count(r.activity) FILTER (WHERE r.activity <> 3),  -- 3: carol, idle
       array_agg(r.activity ORDER BY r.activity) FILTER (WHERE r.activity IS NOT NULL),
       array_agg(r.wait ORDER BY r.activity) FILTER (WHERE r.activity IS NOT NULL),
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(CASE WHEN r.blockerpid IS NULL THEN 0 ELSE 1 END ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(r.blockerpid ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(r.blocker_state ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(CASE WHEN r.blockerpid IS NULL THEN NULL ELSE 10 END::oid ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(coalesce(r.blocking, '{}')::text ORDER BY r.activity) END
FROM pgs_rep_samples s LEFT JOIN pgs_rep_rows r ON r.t = s.t
GROUP BY s.t, s.id, s.period, s.weight;
INSERT INTO pgsentinel_archive_batch
SELECT s.sample_time, s.sample_time,
       pgsentinel_sample_pack(ARRAY[s.sample_id], ARRAY[0::int8], ARRAY[s.sample_period],
                              ARRAY[s.weight], ARRAY[s.active_sessions],
                              ARRAY[s.blockers IS NOT NULL]), r.*
  FROM pgs_rep_s s
  LEFT JOIN LATERAL (
       SELECT pgsentinel_batch_pack(pgsentinel_pack(array_agg(1 ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.session_id ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(u.w ORDER BY a.session_id)), array_agg(a.state ORDER BY a.session_id),
              pgsentinel_pack(array_agg(pgsentinel_us_between(s.sample_time, a.xact_start) ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(pgsentinel_us_between(coalesce(a.xact_start, s.sample_time), a.query_start)
                        ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(pgsentinel_us_between(coalesce(a.query_start, a.xact_start, s.sample_time),
                                              a.state_change) ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.backend_xid ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.backend_xmin ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.top_level_query_id ORDER BY a.session_id)),
              array_agg(a.top_level_query_values ORDER BY a.session_id),
              pgsentinel_pack(array_agg(a.query_id ORDER BY a.session_id)),
              array_agg(a.query_values ORDER BY a.session_id),
              array_agg(a.cmdtype ORDER BY a.session_id),
              array_agg(a.queryid ORDER BY a.session_id),
              array_agg(a.nested_queryid ORDER BY a.session_id),
              pgsentinel_pack(s.blockers), pgsentinel_pack(s.blockerpids), s.blocker_states, s.blocker_usesysids, s.blocking_pids)
         FROM unnest(s.activity_ids, s.wait_event_ids) u(a, w)
         JOIN pgs_rep_a a ON a.activity_id = u.a) r ON true;

-- each activity with its session
CREATE TEMP VIEW pgs_rep_av AS
SELECT x.activity_id, x.state, x.queryid, y.pid, y.datname, y.usesysid,
       y.usename, y.application_name, y.client_addr, y.backend_type
  FROM pgs_rep_a x JOIN pgs_rep_se y ON y.session_id = x.session_id;
-- The rollups, summed from those rows as the archiver sums its rows
-- (src/archive/archive_step.c), a minute's rows as one batch.
INSERT INTO pgsentinel_rollup_minute_batch
SELECT r.bucket, pgsentinel_minute_pack(array_agg(r.datname), array_agg(r.usesysid), array_agg(r.usename),
       array_agg(r.application_name), array_agg(r.backend_type),
       array_agg(r.wait_event_type), array_agg(r.wait_event), array_agg(r.queryid),
       array_agg(r.db_time), array_agg(r.rows))
FROM (SELECT date_trunc('minute', s.sample_time, 'UTC') AS bucket, a.datname, a.usesysid,
             a.usename, a.application_name, a.backend_type, w.wait_event_type,
             w.wait_event, a.queryid, sum(s.weight) AS db_time, count(*) AS rows
      FROM pgs_rep_s s
      CROSS JOIN LATERAL unnest(s.activity_ids, s.wait_event_ids) AS u(activity_id, wait_event_id)
      JOIN pgs_rep_av a ON a.activity_id = u.activity_id
      LEFT JOIN pgsentinel_archive_wait_event w ON w.wait_event_id = u.wait_event_id
      WHERE pgsentinel_load_weight(a.state, 1) > 0
      GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9) r
GROUP BY r.bucket;
INSERT INTO pgsentinel_rollup_hour (bucket, datname, usesysid, usename,
       application_name, backend_type, wait_event_type, wait_event, queryid,
       db_time, rows)
SELECT date_trunc('hour', bucket, 'UTC'), datname, usesysid, usename,
       application_name, backend_type, wait_event_type, wait_event, queryid,
       sum(db_time), sum(rows)
FROM pgsentinel_rollup_minute
WHERE bucket >= '2020-01-01' AND bucket < '2020-01-02'
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
INSERT INTO pgsentinel_rollup_session_hour (bucket, pid, datname, usesysid,
       usename, application_name, client_addr, backend_type, wait_event_type,
       wait_event, db_time, rows, last_time)
SELECT date_trunc('hour', s.sample_time, 'UTC'), a.pid, a.datname, a.usesysid,
       a.usename, a.application_name, a.client_addr, a.backend_type,
       w.wait_event_type, w.wait_event, sum(s.weight), count(*), max(s.sample_time)
FROM pgs_rep_s s
CROSS JOIN LATERAL unnest(s.activity_ids, s.wait_event_ids) AS u(activity_id, wait_event_id)
JOIN pgs_rep_av a ON a.activity_id = u.activity_id
LEFT JOIN pgsentinel_archive_wait_event w ON w.wait_event_id = u.wait_event_id
WHERE pgsentinel_load_weight(a.state, 1) > 0
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;
INSERT INTO pgsentinel_rollup_session_minute_batch
SELECT r.bucket, pgsentinel_session_minute_pack(array_agg(r.pid), array_agg(r.datname), array_agg(r.usesysid),
       array_agg(r.usename), array_agg(r.application_name), array_agg(r.client_addr),
       array_agg(r.backend_type), array_agg(r.wait_event_type), array_agg(r.wait_event),
       array_agg(r.db_time), array_agg(r.rows), array_agg(r.last_time))
FROM (SELECT date_trunc('minute', s.sample_time, 'UTC') AS bucket, a.pid, a.datname,
             a.usesysid, a.usename, a.application_name, a.client_addr, a.backend_type,
             w.wait_event_type, w.wait_event, sum(s.weight) AS db_time, count(*) AS rows,
             max(s.sample_time) AS last_time
      FROM pgs_rep_s s
      CROSS JOIN LATERAL unnest(s.activity_ids, s.wait_event_ids) AS u(activity_id, wait_event_id)
      JOIN pgs_rep_av a ON a.activity_id = u.activity_id
      LEFT JOIN pgsentinel_archive_wait_event w ON w.wait_event_id = u.wait_event_id
      WHERE pgsentinel_load_weight(a.state, 1) > 0
      GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10) r
GROUP BY r.bucket;
INSERT INTO pgsentinel_rollup_blocking_hour
SELECT * FROM pgsentinel_blocking_parts((
    SELECT jsonb_agg(jsonb_build_object(
               'ash_time', x.ash_time, 'sample_id', x.sample_id, 'pid', x.pid,
               'weight', x.weight, 'usesysid', x.usesysid, 'usename', x.usename,
               'application_name', x.application_name, 'client_addr', x.client_addr,
               'xact_start', x.xact_start,
               'state', x.state, 'wait_event_type', x.wait_event_type,
               'wait_event', x.wait_event, 'query', x.top_level_query,
               'blocking', CASE WHEN cardinality(x.blocking_pids) > 0 THEN x.blocking_pids
                                WHEN x.blockerpid IS NOT NULL THEN ARRAY[x.blockerpid] END,
               'blockerpid', x.blockerpid, 'blocker_state', x.blocker_state,
               'blocker_usesysid', x.blocker_usesysid))
    FROM pgsentinel_ash_archive x
    WHERE x.blocked_sample AND x.ash_time >= '2020-01-01' AND x.ash_time < '2020-01-02'), 'hour');
INSERT INTO pgsentinel_rollup_blocking_minute_batch
SELECT p.bucket, pgsentinel_blocking_minute_pack(
       array_agg(p.kind), array_agg(p.root_pid),
       array_agg(p.pid), array_agg(p.key_usesysid),
       array_agg(p.depth), array_agg(p.blocked_by::text),
       array_agg(p.samples), array_agg(p.db_time),
       array_agg(p.last_time),
       array_agg(p.usesysid), array_agg(p.usename), array_agg(p.state),
       array_agg(p.wait_event_type), array_agg(p.wait_event), array_agg(p.query),
       array_agg(p.first_time),
       array_agg(p.application_name), array_agg(p.client_addr),
       array_agg(p.xact_start), array_agg(p.lock), array_agg(p.lock_mode),
       array_agg(p.blocker_lock_modes))
FROM pgsentinel_blocking_parts((
    SELECT jsonb_agg(jsonb_build_object(
               'ash_time', x.ash_time, 'sample_id', x.sample_id, 'pid', x.pid,
               'weight', x.weight, 'usesysid', x.usesysid, 'usename', x.usename,
               'application_name', x.application_name, 'client_addr', x.client_addr,
               'xact_start', x.xact_start,
               'state', x.state, 'wait_event_type', x.wait_event_type,
               'wait_event', x.wait_event, 'query', x.top_level_query,
               'blocking', CASE WHEN cardinality(x.blocking_pids) > 0 THEN x.blocking_pids
                                WHEN x.blockerpid IS NOT NULL THEN ARRAY[x.blockerpid] END,
               'blockerpid', x.blockerpid, 'blocker_state', x.blocker_state,
               'blocker_usesysid', x.blocker_usesysid))
    FROM pgsentinel_ash_archive x
    WHERE x.blocked_sample AND x.ash_time >= '2020-01-01' AND x.ash_time < '2020-01-02'), 'minute') p
GROUP BY p.bucket;
INSERT INTO pgsentinel_rollup_minute_observed (bucket, samples, observed, peak)
SELECT date_trunc('minute', sample_time, 'UTC'), count(*), sum(weight), max(active_sessions)
FROM pgs_rep_s GROUP BY 1;
INSERT INTO pgsentinel_rollup_hour_observed (bucket, samples, observed, peak)
SELECT date_trunc('hour', bucket, 'UTC'), sum(samples), sum(observed), max(peak)
FROM pgs_rep_om GROUP BY 1;

-- What the history view reads back: 26 samples, 60 s observed; 36 rows,
-- 83 s (carol's 5 idle rows weigh 0).
SELECT count(*) AS samples, sum(weight) AS observed
FROM pgsentinel_sample_history
WHERE sample_time >= '2020-01-01' AND sample_time < '2020-01-01 11:00';
SELECT count(*) AS rows, sum(weight) AS db_time
FROM pgsentinel_ash_history
WHERE ash_time >= '2020-01-01' AND ash_time < '2020-01-01 11:00';

-- Average active sessions over the window: 83 s over the 60 s observed;
-- by wait class (CPU a class of its own); filtered by role.
SELECT key, db_time, round(aas::numeric, 4) AS aas, round(pct::numeric, 2) AS pct,
       observed, coverage
FROM pgsentinel_aas('2020-01-01 10:00', '2020-01-01 10:02');
SELECT key, db_time, round(aas::numeric, 4) AS aas, round(pct::numeric, 2) AS pct,
       observed, coverage
FROM pgsentinel_aas('2020-01-01 10:00', '2020-01-01 10:02', by => 'wait_class');
SELECT key, db_time, round(aas::numeric, 4) AS aas
FROM pgsentinel_aas('2020-01-01 10:00', '2020-01-01 10:02', by => 'wait_event',
                    username => 'bob');
SELECT key, db_time FROM pgsentinel_aas('2020-01-01 10:00', '2020-01-01 10:02',
                                        by => 'database', wait_class => 'Lock');
SELECT key, db_time FROM pgsentinel_aas('2020-01-01 10:00', '2020-01-01 10:02',
                                        by => 'client', application => 'web');
-- A window the sampler did not see has no aas, not an aas of 0.
SELECT key, db_time, aas, observed, coverage
FROM pgsentinel_aas('2020-01-01 11:00', '2020-01-01 12:00');

-- Errors: a NULL or reversed window, an unknown dimension.
SELECT * FROM pgsentinel_aas(NULL, '2020-01-01 10:00');
SELECT * FROM pgsentinel_aas('2020-01-01 10:02', '2020-01-01 10:00');
SELECT * FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', 'colour');
SELECT * FROM pgsentinel_aas_series(until => NULL);
-- a series is bounded: more than 100000 buckets is refused, with what to do
SELECT count(*) FROM pgsentinel_aas_series(now() - interval '10 years', now(), interval '1 second');
SELECT count(*) FROM pgsentinel_aas_series(now() - interval '1 hour', now(), interval '0');

-- The series by 20 s: the 5 s period (10:00:20) and keep_one_in 10
-- (10:00:40) give the same aas as 1 s samples would; every class in every
-- bucket, 0 where idle, coverage 0 where nothing was sampled.
SELECT bucket_start, key, db_time, aas, observed, coverage
FROM pgsentinel_aas_series('2020-01-01 10:00', '2020-01-01 10:02', '20 s')
ORDER BY 1, 2;
-- Without a split: one row per bucket; the bucket chosen from the window
-- (2 minutes: 2 s).
SELECT count(*) AS buckets, min(bucket_start), max(bucket_start),
       sum(db_time) AS db_time, sum(observed) AS observed
FROM pgsentinel_aas_series('2020-01-01 10:00', '2020-01-01 10:02', by => NULL);
SELECT pgsentinel_auto_bucket('2020-01-01', '2020-01-02'),
       pgsentinel_auto_bucket('2020-01-01', '2020-01-08'),
       pgsentinel_auto_bucket('2020-01-01', '2020-01-01 00:00:30', 60);

-- The trailing windows ending at 10:01: peak 3 active sessions (10:00:07-09;
-- carol, idle, is not one).
SELECT period, window_start, db_time, round(aas::numeric, 4) AS aas, peak, observed,
       round(coverage::numeric, 6) AS coverage
FROM pgsentinel_periods('2020-01-01 10:01');

-- Top wait events, sessions, statements (queryid 33 is both the idle
-- root's and its waiter's: only the waiter's Lock time is load).
SELECT rank, key, description, db_time, round(pct::numeric, 2) AS pct, wait_profile
FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02');
SELECT rank, key, description, db_time, wait_profile
FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', 'session', 3);
-- bob's two sessions (102 and 104: batch, from 10.0.0.2) are one group
SELECT rank, key, db_time, wait_profile
FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', 'session_group');
SELECT rank, key, db_time FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', 'role');
SELECT rank, queryid, query, db_time, round(aas::numeric, 4) AS aas, wait_profile,
       calls_per_s, ms_per_call, rows_per_call, counted
FROM pgsentinel_top_statements('2020-01-01 10:00', '2020-01-01 10:02');
-- The texts of the statements a top read from rollups only, all in one
-- pass over the window's rows: 44 (dave, from 14:45) and 99 (none) have
-- no row in it; bob ran 22 and 33; no statement asked, no row read.
SELECT queryid, query
FROM pgsentinel_statement_texts_in('{11,22,33,44,99}', '2020-01-01 14:00', '2020-01-01 14:30',
                                   NULL, NULL, NULL)
ORDER BY queryid;
SELECT queryid, query
FROM pgsentinel_statement_texts_in('{11,22,33}', '2020-01-01 14:00', '2020-01-01 14:30',
                                   NULL, 'bob', NULL)
ORDER BY queryid;
SELECT count(*) AS none
FROM pgsentinel_statement_texts_in('{}', '2020-01-01 00:00', '2020-01-02 00:00', NULL, NULL, NULL);
-- A statement whose text changed (alice's 11 as three texts, 20:00,
-- 20:50, 20:58): each window gets the latest text it holds.
BEGIN;
INSERT INTO pgsentinel_archive_batch
SELECT v.t, v.t,
       pgsentinel_sample_pack(ARRAY[v.id], ARRAY[0::int8], ARRAY[1::float8], ARRAY[1::float8],
                              ARRAY[1], ARRAY[false]),
       pgsentinel_batch_pack(pgsentinel_pack('{1}'::int8[]), pgsentinel_pack('{1}'::int8[]),
       pgsentinel_pack(ARRAY[(SELECT wait_event_id FROM pgs_rep_we WHERE code = 9001)]::int8[]),
       '{active}', pgsentinel_pack('{NULL}'::int8[]), pgsentinel_pack('{NULL}'::int8[]),
       pgsentinel_pack('{NULL}'::int8[]), pgsentinel_pack('{NULL}'::int8[]),
       pgsentinel_pack('{NULL}'::int8[]), pgsentinel_pack(ARRAY[v.text_id]::int8[]), '{NULL}',
       pgsentinel_pack(ARRAY[v.text_id]::int8[]), '{NULL}', '{SELECT}', '{11}', '{NULL}',
       NULL, NULL, NULL, NULL, NULL)
FROM (VALUES ('2020-01-01 20:00+00'::timestamptz, 9000::int8, 2),
             ('2020-01-01 20:50+00', 9001, 4),
             ('2020-01-01 20:58+00', 9002, 3)) v(t, id, text_id);
SELECT w.lo, w.hi, t.query
FROM (VALUES ('2020-01-01 20:00+00'::timestamptz, '2020-01-01 21:00+00'::timestamptz),
             ('2020-01-01 20:00+00', '2020-01-01 20:55+00'),
             ('2020-01-01 20:00+00', '2020-01-01 20:10+00')) w(lo, hi),
     pgsentinel_statement_texts_in('{11}', w.lo, w.hi, NULL, NULL, NULL) t
ORDER BY w.hi;
ROLLBACK;

-- The blocking tree: the idle-in-transaction root 103, 104 behind it,
-- 105 behind 104 (listed twice by pg_blocking_pids(): counted once).
SELECT root_pid, depth, pid, blocked_by, usename, state, wait_event, query,
       samples, sessions, levels, db_time, aas
FROM pgsentinel_blocking_trees('2020-01-01 10:00', '2020-01-01 10:02');
SELECT count(*) AS trees FROM pgsentinel_blocking_trees('2020-01-01 10:10', '2020-01-01 10:20');
-- A root's trees more than a minute apart are episodes of their own, told
-- apart to the hour in a window older than the minute rollups' retention
-- (to the minute within it: t/035): the roots of the whole day, each
-- episode with its times.
SELECT root_pid, episode, samples, sessions, first_seen, last_seen
FROM pgsentinel_blocking_trees('2020-01-01 09:00', '2020-01-01 16:00')
WHERE depth = 0
ORDER BY episode;

-- Two periods of 20 s, both fully observed; then a period with data
-- against one without: no difference is invented.
SELECT key, total, aas_1, aas_2, round(diff::numeric, 4) AS diff,
       round(pct_of_change::numeric, 2) AS pct_of_change, coverage_1, coverage_2
FROM pgsentinel_compare('2020-01-01 10:00', '2020-01-01 10:00:20',
                        '2020-01-01 10:00:20', '2020-01-01 10:00:40');
SELECT key, round(aas_1::numeric, 4) AS aas_1, aas_2, diff, pct_of_change,
       coverage_1, coverage_2
FROM pgsentinel_compare('2020-01-01 10:00', '2020-01-01 10:01',
                        '2020-01-01 10:01', '2020-01-01 10:02', 'wait_event');

-- Arguments that can only show nothing: a count of rows or CPUs below 1
-- is an error, and so is a chart's width outside 31 to 1000 columns (a
-- width of 100 million built 287 million characters); a window in the
-- future and a filter naming a database, role or wait class that does not
-- exist, or an application no row of the window has, draw one NOTICE each
-- (once per statement, however many reports the statement runs).
SET client_min_messages = notice;
\set SHOW_CONTEXT never
SELECT count(*) FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', n => 0);
SELECT count(*) FROM pgsentinel_top_statements('2020-01-01 10:00', '2020-01-01 10:02', n => -3);
SELECT count(*) FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', cpus => -1);
SELECT count(*) FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', width => 100000000);
SELECT count(*) FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', width => 30);
SELECT length(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', cpus => 0)) > 0;
SELECT length(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', top_n => 0)) > 0;
SELECT key, aas, coverage FROM pgsentinel_aas(now() + interval '1 hour', now() + interval '2 hours');
SELECT count(*) FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', dbname => 'nosuchdb');
SELECT count(*) FROM pgsentinel_aas_series('2020-01-01 10:00', '2020-01-01 10:02',
                                           username => 'nosuchrole');
SELECT count(*) FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', wait_class => 'Locks');
SELECT count(*) FROM pgsentinel_compare('2020-01-01 10:00', '2020-01-01 10:01',
                                        '2020-01-01 10:01', '2020-01-01 10:02', wait_class => 'Locks');
SELECT length(pgsentinel_report(now() + interval '1 day', now() + interval '2 days',
                                dbname => 'nosuchdb')) > 0 AS one_notice_each;
-- an application that no row of the window has (a misspelling)
SELECT count(*) FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', 'wait_event',
                                    application => 'batch-reprot');
SELECT count(*) FROM pgsentinel_aas('2020-01-01 10:00', '2020-01-01 10:02', application => 'Batch');
-- (the rows' own database, wait class and application draw none)
SELECT count(*) >= 0 AS quiet FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02',
                                                  dbname => current_database(), wait_class => 'CPU',
                                                  application => 'batch');
\set SHOW_CONTEXT errors
RESET client_min_messages;

-- The psql chart, plain and coloured (the escape shown as ^[).  The CPU
-- line is drawn by default at the CPUs pgsentinel_cpu_count() finds (here
-- the setting), and inside a bar that passes it.
SET pgsentinel_report.cpus = 1;
SELECT * FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', '10 s');
SET pgsentinel_report.cpus = 2;
SELECT * FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', '10 s', cpus => 2);
SELECT max(length(c)) <= 80 AS fits_80_columns
FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02') c;
-- the narrowest and the widest bars (NULL: the default's); their lines
-- begin with 19 columns of time and load
SELECT max(length(c)) FILTER (WHERE c LIKE '%|%' AND c NOT LIKE '%(no samples)') AS widest_at_31
FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', width => 31) c;
SELECT max(length(c)) FILTER (WHERE c LIKE '%|%' AND c NOT LIKE '%(no samples)') AS widest_at_1000
FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', width => 1000) c;
SELECT max(length(c)) FILTER (WHERE c LIKE '%|%' AND c NOT LIKE '%(no samples)') AS widest_at_null
FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', width => NULL) c;
SELECT replace(c, chr(27), '^[') AS coloured
FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:00:20', '10 s', colour => true) c;
RESET pgsentinel_report.cpus;

-- The report as text (without its line naming the server and the time).
SELECT line FROM regexp_split_to_table(
    pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', cpus => 2), E'\n') line
WHERE line !~ ' generated [0-9]';
-- a tree of one waiter on one level says so in the singular
SELECT line FROM regexp_split_to_table(
    pgsentinel_report('2020-01-01 10:00:04', '2020-01-01 10:00:07', cpus => 2), E'\n') line
WHERE line ~ 'root blocker pid';
-- its header names the databases the load ran in and the versions, each
-- labelled (the HTML's footer too)
SELECT regexp_replace(split_part(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', cpus => 2),
                                 E'\n', 2), ', PostgreSQL .*', '') AS header,
       split_part(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', cpus => 2), E'\n', 2)
           ~ ', PostgreSQL [0-9.]+.*, pgsentinel [0-9]+\.[0-9]+\.[0-9]+, generated ' AS versions_labelled,
       pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'html', cpus => 2)
           ~ '<p class="none">pgsentinel [0-9]+\.[0-9]+\.[0-9]+ &middot; PostgreSQL ' AS html_footer;
-- A query text cannot drive the terminal of the DBA who reads the text
-- report (psql -XAt): its control characters are shown as '?'.
BEGIN;
UPDATE pgsentinel_archive_text
   SET text = E'SELECT sum(amount) FROM ledger /* \x1b[2J\x1b]0;owned\x07 */'
 WHERE day = '2020-01-01' AND text_id = 2;
SELECT count(*) FILTER (WHERE line ~ '[[:cntrl:]]') AS lines_with_control_characters,
       count(*) FILTER (WHERE strpos(line, 'ledger /* ?[2J?]0;owned? */') > 0) AS lines_escaped
FROM regexp_split_to_table(
    pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', cpus => 2), E'\n') line;
ROLLBACK;
-- As JSON: every section.
SELECT jsonb_object_keys(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02',
                                           'json')::jsonb) AS section ORDER BY 1;
SELECT r->'load' AS load, jsonb_array_length(r->'series') AS series_rows,
       r->'top_statements'->0->>'queryid' AS top_statement,
       r->'blocking_trees'->0->>'root_pid' AS root_blocker
FROM (SELECT pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'json')::jsonb AS r) x;
-- As HTML: one self-contained page with the chart, one area per class
-- and the CPU line, and the same load sliced by SQL, application and role
-- (tabs without script); nothing to fetch.
SELECT (regexp_match(h, '^<!DOCTYPE html>')) IS NOT NULL AS html,
       (SELECT count(*) FROM regexp_matches(h, '<svg ', 'g')) AS svgs,
       (SELECT array_agg(m[1]) FROM regexp_matches(substring(h from 'id="panel-wait_class">(.*?)</div>'),
                                                   '<path class="series" data-class="([A-Za-z]+)"', 'g') m)
           AS areas,
       (SELECT array_agg(m[1]) FROM regexp_matches(substring(h from 'id="panel-application">(.*?)</div>'),
                                                   '<path class="series" data-class="([^"]+)"', 'g') m)
           AS application_areas,
       (SELECT array_agg(m[1]) FROM regexp_matches(substring(h from 'id="panel-statement">(.*?)</div>'),
                                                   '<path class="series" data-class="([^"]+)"', 'g') m)
           AS statement_areas,
       (SELECT count(*) FROM regexp_matches(h, '<line class="cpus"', 'g')) AS cpu_lines,
       h ~* '(src=|href=|url\(|@import|<script)' AS fetches_something,
       substring(h from '<rect class="tip"[^>]*><title>([^<]*)</title>') AS first_tooltip,
       h ~ '<td class="tree">103</td>.*<td class="tree">&#9492;&#9472;&#9472; 104</td>.*<td class="tree">    &#9492;&#9472;&#9472; 105</td>' AND h ~ 'idle in transaction' AS names_root_state
FROM (SELECT pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'html', cpus => 2) AS h) x;
-- The trees are drawn depth first: each session under the one it waited
-- for (2 and 3 behind root 1, 5 behind 2, 4 behind 3); one whose blocker
-- is not a level up, last.
SELECT e->>'tree' AS tree
FROM jsonb_array_elements(pgsentinel_html_trees('[
    {"root_pid": 1, "depth": 0, "pid": 1},
    {"root_pid": 1, "depth": 1, "pid": 2, "blocked_by": [1]},
    {"root_pid": 1, "depth": 1, "pid": 3, "blocked_by": [1]},
    {"root_pid": 1, "depth": 2, "pid": 4, "blocked_by": [3]},
    {"root_pid": 1, "depth": 2, "pid": 5, "blocked_by": [2, 3]},
    {"root_pid": 6, "depth": 0, "pid": 6},
    {"root_pid": 6, "depth": 2, "pid": 7, "blocked_by": [9]}]')) e;
SELECT pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'pdf');
-- The chart's axes are labelled at round values and round times.
SELECT (SELECT string_agg(m[1], ' ') FROM regexp_matches(h, 'text-anchor="end">([0-9.]+)</text>', 'g') m)
         AS y_ticks,
       (SELECT string_agg(m[1], ' ') FROM regexp_matches(h, 'text-anchor="middle">([0-9:]+)</text>', 'g') m)
         AS time_ticks
FROM (SELECT substring(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'html', cpus => 2)
                       from 'id="panel-wait_class">(.*?)</div>') AS h) x;

-- The report's statements are planned without JIT (their costs count ways
-- of reading that never run: bench/REPORT.md, section 7).
SELECT proconfig FROM pg_proc
WHERE oid = 'pgsentinel_report(timestamptz, timestamptz, text, integer, integer, text, text)'::regprocedure;

-- The CPU count: the setting wins.
SET pgsentinel_report.cpus = 3;
SELECT pgsentinel_cpu_count();
RESET pgsentinel_report.cpus;
SELECT pgsentinel_cpu_count() IS NULL OR pgsentinel_cpu_count() > 0 AS sane;

-- Rollups and rows give the same answers (docs/reports.md): every query
-- below, run reading whole hours and minutes from the rollups and again
-- with pgsentinel_report.rollups = off (rows only), over windows of
-- 13:59:30-15:00:30 (weights 10, 10 with keep_one_in 10, 5, 30; empty
-- samples) and of 10:00-10:02.
CREATE FUNCTION pg_temp.pgs_same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    a text;
    b text;
BEGIN
    EXECUTE 'SELECT string_agg(x::text, E''\n'' ORDER BY x::text) FROM (' || q || ') x' INTO a;
    PERFORM set_config('pgsentinel_report.rollups', 'off', true);
    EXECUTE 'SELECT string_agg(x::text, E''\n'' ORDER BY x::text) FROM (' || q || ') x' INTO b;
    PERFORM set_config('pgsentinel_report.rollups', 'on', true);
    RETURN CASE WHEN a IS NULL THEN 'empty' WHEN a = b THEN 'same' ELSE 'DIFFERENT' END;
END
$$;
CREATE TEMP TABLE pgs_rep_windows (w int, since timestamptz, until timestamptz);
INSERT INTO pgs_rep_windows VALUES
    (1, '2020-01-01 13:59:45', '2020-01-01 15:00:15'),
    (2, '2020-01-01 13:00', '2020-01-01 16:00'),
    (3, '2020-01-01 14:00:10', '2020-01-01 14:50:50'),
    (4, '2020-01-01 09:00', '2020-01-01 16:00'),
    (5, '2020-01-01 10:00', '2020-01-01 10:02'),
    (6, '2020-01-01 14:29:59', '2020-01-01 14:31:01');
-- how each window is read
SELECT w, string_agg(format('%s %s-%s', p.kind, to_char(p.lo, 'HH24:MI:SS'),
                            to_char(p.hi, 'HH24:MI:SS')), ', ' ORDER BY p.lo) AS pieces
FROM pgs_rep_windows, pgsentinel_window_pieces(since, until, 'hour') p
GROUP BY w ORDER BY w;
-- the totals of window 1 (by hand: observed 10 + 1800 + 900 + 930 = 3640 s)
SELECT key, db_time, round(aas::numeric, 4) AS aas, observed
FROM pgsentinel_aas('2020-01-01 13:59:45', '2020-01-01 15:00:15', by => 'wait_class');
CREATE TEMP TABLE pgs_rep_q (f text, q text);
-- (%3$s: where a call names a fleet server)
INSERT INTO pgs_rep_q VALUES
    ('aas', 'SELECT * FROM pgsentinel_aas(%L, %L%3$s)'),
    ('aas wait_class', 'SELECT * FROM pgsentinel_aas(%L, %L, ''wait_class''%3$s)'),
    ('aas wait_event', 'SELECT * FROM pgsentinel_aas(%L, %L, ''wait_event''%3$s)'),
    ('aas statement', 'SELECT * FROM pgsentinel_aas(%L, %L, ''statement''%3$s)'),
    ('aas role bob', 'SELECT * FROM pgsentinel_aas(%L, %L, ''backend_type'', username => ''bob''%3$s)'),
    ('aas database IO', 'SELECT * FROM pgsentinel_aas(%L, %L, ''database'', wait_class => ''IO''%3$s)'),
    ('series', 'SELECT * FROM pgsentinel_aas_series(%L, %L%3$s)'),
    ('series 1 h', 'SELECT * FROM pgsentinel_aas_series(%L, %L, ''1 hour''%3$s)'),
    ('series 30 min', 'SELECT * FROM pgsentinel_aas_series(%L, %L, ''30 minutes'', ''wait_event''%3$s)'),
    ('series 1 min', 'SELECT * FROM pgsentinel_aas_series(%L, %L, ''1 minute'', ''application''%3$s)'),
    ('series 20 s', 'SELECT * FROM pgsentinel_aas_series(%L, %L, ''20 s''%3$s)'),
    ('periods', 'SELECT * FROM pgsentinel_periods(%2$L%3$s)'),
    ('periods filtered', 'SELECT * FROM pgsentinel_periods(%2$L, application => ''batch''%3$s)'),
    ('top wait_event', 'SELECT * FROM pgsentinel_top(%L, %L%3$s)'),
    ('top wait_class', 'SELECT * FROM pgsentinel_top(%L, %L, ''wait_class''%3$s)'),
    ('top statement', 'SELECT * FROM pgsentinel_top(%L, %L, ''statement''%3$s)'),
    ('top role', 'SELECT * FROM pgsentinel_top(%L, %L, ''role''%3$s)'),
    ('top session_group', 'SELECT * FROM pgsentinel_top(%L, %L, ''session_group''%3$s)'),
    ('top application', 'SELECT * FROM pgsentinel_top(%L, %L, ''application''%3$s)'),
    ('top backend_type', 'SELECT * FROM pgsentinel_top(%L, %L, ''backend_type''%3$s)'),
    ('top database', 'SELECT * FROM pgsentinel_top(%L, %L, ''database''%3$s)'),
    ('top session', 'SELECT * FROM pgsentinel_top(%L, %L, ''session''%3$s)'),
    ('top client', 'SELECT * FROM pgsentinel_top(%L, %L, ''client''%3$s)'),
    ('aas session', 'SELECT * FROM pgsentinel_aas(%L, %L, ''session''%3$s)'),
    ('aas wait_event pid 102', 'SELECT * FROM pgsentinel_aas(%L, %L, ''wait_event'', session_pid => 102%3$s)'),
    ('aas statement pid 104', 'SELECT * FROM pgsentinel_aas(%L, %L, ''statement'', session_pid => 104%3$s)'),
    ('series 1 h client', 'SELECT * FROM pgsentinel_aas_series(%L, %L, ''1 hour'', ''client''%3$s)'),
    ('periods pid 101', 'SELECT * FROM pgsentinel_periods(%2$L, session_pid => 101%3$s)'),
    ('top statements', 'SELECT * FROM pgsentinel_top_statements(%L, %L%3$s)'),
    ('blocking trees', 'SELECT * FROM pgsentinel_blocking_trees(%L, %L%3$s)'),
    ('compare', 'SELECT * FROM pgsentinel_compare(%1$L, %2$L, %1$L::timestamptz + interval ''30 minutes'', %2$L::timestamptz + interval ''30 minutes'', ''wait_event''%3$s)'),
    ('chart', 'SELECT * FROM pgsentinel_chart(%L, %L, cpus => 2%3$s)'),
    ('report', 'SELECT pgsentinel_report(%L, %L, ''json''%3$s)::jsonb - ''generated_at''');
SELECT w, f, pg_temp.pgs_same(format(q, since, until, '')) AS result
FROM pgs_rep_windows, pgs_rep_q
ORDER BY w, f;
-- the sessions' rollups are read too
UPDATE pgs_rep_sh SET db_time = db_time + 1
WHERE bucket = '2020-01-01 14:00' AND pid = 102;
SELECT pg_temp.pgs_same($$SELECT * FROM pgsentinel_top('2020-01-01 13:00', '2020-01-01 16:00', 'session')$$) AS session_changed;
UPDATE pgs_rep_sh SET db_time = db_time - 1
WHERE bucket = '2020-01-01 14:00' AND pid = 102;
-- and the blocking trees' rollups
UPDATE pgs_rep_bh SET db_time = db_time + 1
WHERE bucket = '2020-01-01 14:00' AND kind = 'b';
SELECT pg_temp.pgs_same($$SELECT * FROM pgsentinel_blocking_trees('2020-01-01 13:00', '2020-01-01 16:00')$$) AS blocking_changed;
UPDATE pgs_rep_bh SET db_time = db_time - 1
WHERE bucket = '2020-01-01 14:00' AND kind = 'b';
CREATE TEMP TABLE pgs_rep_sm_kept AS
SELECT * FROM pgs_rep_sm WHERE bucket = '2020-01-01 14:49';
DELETE FROM pgs_rep_sm WHERE bucket = '2020-01-01 14:49';
SELECT pg_temp.pgs_same($$SELECT * FROM pgsentinel_top('2020-01-01 14:00:10', '2020-01-01 14:50:50', 'session')$$) AS session_minute_changed;
INSERT INTO pgs_rep_sm SELECT * FROM pgs_rep_sm_kept;
DROP TABLE pgs_rep_sm_kept;
CREATE TEMP TABLE pgs_rep_bm_kept AS
SELECT * FROM pgs_rep_bm WHERE bucket = '2020-01-01 14:20';
DELETE FROM pgs_rep_bm WHERE bucket = '2020-01-01 14:20';
SELECT pg_temp.pgs_same($$SELECT * FROM pgsentinel_blocking_trees('2020-01-01 14:00:10', '2020-01-01 14:50:50')$$) AS blocking_minute_changed;
INSERT INTO pgs_rep_bm SELECT * FROM pgs_rep_bm_kept;
DROP TABLE pgs_rep_bm_kept;
-- the rollups are read: one changed rollup changes the answer
UPDATE pgs_rep_rh SET db_time = db_time + 1
WHERE bucket = '2020-01-01 14:00' AND wait_event = 'DataFileRead';
SELECT pg_temp.pgs_same($$SELECT * FROM pgsentinel_aas('2020-01-01 13:00', '2020-01-01 16:00')$$) AS hour_changed;
UPDATE pgs_rep_rh SET db_time = db_time - 1
WHERE bucket = '2020-01-01 14:00' AND wait_event = 'DataFileRead';
CREATE TEMP TABLE pgs_rep_rm_kept AS
SELECT * FROM pgs_rep_rm WHERE bucket = '2020-01-01 14:49';
DELETE FROM pgs_rep_rm WHERE bucket = '2020-01-01 14:49';
SELECT pg_temp.pgs_same($$SELECT * FROM pgsentinel_aas('2020-01-01 14:00:10', '2020-01-01 14:50:50')$$) AS minute_changed;
INSERT INTO pgs_rep_rm SELECT * FROM pgs_rep_rm_kept;
DROP TABLE pgs_rep_rm_kept;
-- Past the split point the history is the ring's: no rollup is read there.
-- (The split point moves on as the ring turns: it is read after the pieces.)
CREATE TEMP TABLE pgs_pieces AS
SELECT * FROM pgsentinel_window_pieces(now() - interval '3 hours', now() + interval '1 hour', 'hour');
SELECT bool_and(p.kind = 'raw'
                OR p.hi <= (SELECT x.split_time FROM pgsentinel_history_split x)) AS rollups_before_split,
       (array_agg(p.kind ORDER BY p.lo DESC))[1] AS last_piece
FROM pgs_pieces p;
DROP TABLE pgs_pieces;

-- A fleet server's rollups (docs/fleet.md): the same archive, copied into
-- the repository's tables as the rows of a fleet server, is rolled up
-- there (pgsentinel_fleet_roll(): the archiver's rollup SQL, not the sums
-- above).  In one transaction: the archiver's tick rolls servers up too,
-- and must see the rows whole.  The tick's rolls and these calls take an
-- hour of rows each: they go on until the server's newest whole minute.
BEGIN;
-- (an id of its own: the next ids are for the fleet test's servers)
INSERT INTO pgsentinel_fleet_server (server_id, name, method, conninfo, retention,
                                     minute_retention, hour_retention)
VALUES (9001, 'pgs_rep_copy', 'logical', '', '100 years', '100 years', '100 years')
RETURNING server_id AS rep_srv \gset
SELECT pgsentinel_fleet_partitions(:rep_srv, '2020-01-01', '2020-01-01') > 0 AS made;
INSERT INTO pgsentinel_fleet_batch SELECT :rep_srv, 0, x.* FROM pgs_rep_b x;
INSERT INTO pgsentinel_fleet_session SELECT :rep_srv, 0, x.* FROM pgs_rep_se x;
INSERT INTO pgsentinel_fleet_text SELECT :rep_srv, 0, x.* FROM pgs_rep_t x;
INSERT INTO pgsentinel_fleet_wait_event SELECT :rep_srv, 0, x.* FROM pgsentinel_archive_wait_event x;
COMMIT;
DO $$
BEGIN
    FOR i IN 1..20 LOOP
        PERFORM pgsentinel_fleet_roll('pgs_rep_copy');
    END LOOP;
END $$;
SELECT rolled_until, last_error FROM pgsentinel_fleet_status WHERE name = 'pgs_rep_copy';
SELECT samples_rolled, rows_rolled FROM pgsentinel_fleet_roll('pgs_rep_copy');
SELECT (SELECT count(*) FROM pgsentinel_fleet_rollup_minute WHERE server_id = :rep_srv) AS minute_rows,
       (SELECT count(*) FROM pgsentinel_fleet_rollup_hour WHERE server_id = :rep_srv) AS hour_rows,
       (SELECT count(*) FROM pgsentinel_fleet_rollup_blocking_hour WHERE server_id = :rep_srv) AS blocking_hour_rows;
-- its reports read its rollups and rows as this server's read its own:
-- the same answers from rollups and from rows only, and the same as this
-- server's (all but the report and the chart, which name the server).
-- Windows 1, 3 and 5 read every kind of piece (hours, minutes, rows); the
-- cuts of the others are this server's, checked above.
SELECT count(*) AS queries,
       string_agg(w || ' ' || f, ', ') FILTER (WHERE result <> 'same') AS not_same
FROM (SELECT w, f, pg_temp.pgs_same(format(q, since, until, ', server => ''pgs_rep_copy''')) AS result
        FROM pgs_rep_windows, pgs_rep_q WHERE w IN (1, 3, 5)) x;
CREATE FUNCTION pg_temp.pgs_as_here(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    a text;
    b text;
BEGIN
    EXECUTE 'SELECT string_agg(x::text, E''\n'' ORDER BY x::text) FROM (' || format(q, '') || ') x' INTO a;
    EXECUTE 'SELECT string_agg(x::text, E''\n'' ORDER BY x::text) FROM ('
            || format(q, ', server => ''pgs_rep_copy''') || ') x' INTO b;
    RETURN CASE WHEN a IS NULL THEN 'empty' WHEN a = b THEN 'same' ELSE 'DIFFERENT' END;
END
$$;
SELECT count(*) AS queries,
       string_agg(w || ' ' || f, ', ') FILTER (WHERE result <> 'same') AS not_as_here
FROM (SELECT w, f, pg_temp.pgs_as_here(replace(format(q, since, until, '{server}'), '{server}', '%s')) AS result
        FROM pgs_rep_windows, pgs_rep_q
       WHERE w IN (1, 3, 5) AND f NOT IN ('report', 'chart')) x;
-- the fleet's AAS reads each server as its reports do: per window, and
-- per bucket of an hour, a minute and 20 seconds, this server's figures
SELECT count(*) AS windows,
       count(*) FILTER (WHERE f.x = a.x) AS same_as_here
FROM pgs_rep_windows w,
     (VALUES ('1 hour'::interval), ('1 minute'), ('20 seconds')) v(b),
     LATERAL (SELECT string_agg(round(db_time::numeric, 6) || '/' || round(observed::numeric, 6),
                                ',' ORDER BY bucket_start)
                FROM pgsentinel_fleet_aas(w.since, w.until, v.b, 'pgs_rep_copy')) f(x),
     LATERAL (SELECT string_agg(round(db_time::numeric, 6) || '/' || round(observed::numeric, 6),
                                ',' ORDER BY bucket_start)
                FROM pgsentinel_aas_series(w.since, w.until, v.b, NULL)) a(x);
SELECT count(*) AS windows,
       count(*) FILTER (WHERE round(f.db_time::numeric, 6) = round(a.db_time::numeric, 6)
                          AND round(f.observed::numeric, 6) = round(a.observed::numeric, 6)) AS same_as_here
FROM pgs_rep_windows w,
     LATERAL pgsentinel_fleet_aas(w.since, w.until, server => 'pgs_rep_copy') f,
     LATERAL pgsentinel_aas(w.since, w.until) a;
SELECT rank, server, round(db_time::numeric, 3) AS db_time, top_wait_class
FROM pgsentinel_fleet_top_servers('2020-01-01 13:00', '2020-01-01 16:00')
WHERE server = 'pgs_rep_copy';
-- the overview reads the rollups of every server at once, up to where
-- they end (rolled_until 17:09): its AAS and its load per bucket are
-- pgsentinel_fleet_aas's over the rolled-up part of each window of whole
-- minutes, in buckets of minutes and of hours (a day: hour rollups)
SELECT v.w, o.bucket, o.state,
       round(o.aas::numeric, 6) = round(a.aas::numeric, 6) AS aas_same,
       (o.load::numeric(20, 6)[])[1:cardinality(fa.l)] = fa.l
         AND array_remove(o.load[cardinality(fa.l) + 1:], NULL) = '{}' AS load_same,
       cardinality(o.load) AS buckets,
       o.top_wait_class = t.top_wait_class AS top_class_same,
       o.peak, jsonb_array_length(o.top_events) AS events, o.top_queries->0->>'queryid' AS top_query
FROM (VALUES (2, '2020-01-01 13:00'::timestamptz, '2020-01-01 16:00'::timestamptz, 24),
             (4, '2020-01-01 09:00', '2020-01-01 16:00', 7),
             (5, '2020-01-01 10:00', '2020-01-01 10:02', 24),
             (7, '2020-01-01 00:00', '2020-01-02 00:00', 24)) v(w, since, until, n),
     LATERAL pgsentinel_fleet_overview(v.since, v.until, v.n) o,
     LATERAL pgsentinel_fleet_aas(v.since, least(v.until, o.as_of), server => 'pgs_rep_copy') a,
     LATERAL (SELECT ARRAY(SELECT round(x.aas::numeric, 6)
                             FROM pgsentinel_fleet_aas(v.since, least(v.until, o.as_of), o.bucket, 'pgs_rep_copy') x
                            ORDER BY x.bucket_start)) fa(l),
     LATERAL (SELECT x.top_wait_class FROM pgsentinel_fleet_top_servers(v.since, least(v.until, o.as_of)) x
               WHERE x.server = 'pgs_rep_copy') t
WHERE o.server = 'pgs_rep_copy'
ORDER BY v.w;
-- and as a page: the server's row links to its section, its load is drawn
SELECT h LIKE '%<a href="#s-pgs_rep_copy">pgs_rep_copy</a>%' AS row_links,
       h LIKE '%<h2 id="s-pgs_rep_copy">%' AS section,
       h LIKE '%<polyline %' AS sparkline,
       h LIKE '%<td>DataFileRead</td>%' AS top_event
FROM pgsentinel_fleet_overview_html('2020-01-01 00:00', '2020-01-02 00:00') h;
\set SHOW_CONTEXT never
SELECT pgsentinel_fleet_overview(buckets => 0);
SELECT pgsentinel_fleet_overview('2020-01-02', '2020-01-01');
\set SHOW_CONTEXT errors
-- a member of pg_read_all_stats (not a superuser) reads the server's
-- rollups and rows as a superuser does
CREATE TEMP TABLE pgs_rep_fleet_su AS
SELECT w, f, md5(string_agg(x, E'\n' ORDER BY x)) AS h
FROM (SELECT w.w, v.f, r::text AS x
        FROM pgs_rep_windows w,
             (VALUES ('aas'), ('blocking trees'), ('fleet top statements')) v(f),
             LATERAL (SELECT to_jsonb(a) AS r FROM pgsentinel_aas(w.since, w.until, server => 'pgs_rep_copy') a
                       WHERE v.f = 'aas'
                      UNION ALL
                      SELECT to_jsonb(b) FROM pgsentinel_blocking_trees(w.since, w.until, server => 'pgs_rep_copy') b
                       WHERE v.f = 'blocking trees'
                      UNION ALL
                      SELECT to_jsonb(t) FROM pgsentinel_fleet_top_statements(w.since, w.until, 'pgs_rep_copy') t
                       WHERE v.f = 'fleet top statements') r) y
GROUP BY 1, 2;
GRANT SELECT ON pgs_rep_fleet_su, pgs_rep_windows TO PUBLIC;
CREATE ROLE regress_pgs_fleet_stats IN ROLE pg_read_all_stats;
SET ROLE regress_pgs_fleet_stats;
SELECT count(*) AS calls,
       count(*) FILTER (WHERE su.h = mine.h) AS same_as_superuser
FROM pgs_rep_fleet_su su,
     LATERAL (SELECT md5(string_agg(x, E'\n' ORDER BY x)) AS h
                FROM (SELECT r::text AS x
                        FROM pgs_rep_windows w,
                             LATERAL (SELECT to_jsonb(a) AS r FROM pgsentinel_aas(w.since, w.until, server => 'pgs_rep_copy') a
                                       WHERE su.f = 'aas'
                                      UNION ALL
                                      SELECT to_jsonb(b) FROM pgsentinel_blocking_trees(w.since, w.until, server => 'pgs_rep_copy') b
                                       WHERE su.f = 'blocking trees'
                                      UNION ALL
                                      SELECT to_jsonb(t) FROM pgsentinel_fleet_top_statements(w.since, w.until, 'pgs_rep_copy') t
                                       WHERE su.f = 'fleet top statements') r
                       WHERE w.w = su.w) y) mine;
RESET ROLE;
DROP ROLE regress_pgs_fleet_stats;
-- A server's statements are read from its deltas alone (a node's texts
-- would all be fetched at each call), and a filter on the text keeps the
-- texts' joins after the statement's row is found (joined to the deltas
-- by server and day first, they made a product of both: minutes).
BEGIN;
INSERT INTO pgsentinel_fleet_statement_batch (server_id, feed, first_time, last_time,
       row_data)
SELECT :rep_srv, 0, min(x.t), max(x.t), pgsentinel_statement_batch_pack(
       pgsentinel_pack(array_agg(pgsentinel_us_between('2020-01-01 10:01', x.t) ORDER BY g)),
       pgsentinel_pack(array_fill(10000000::int8, ARRAY[200])),
       pgsentinel_pack(array_agg(g::int8 ORDER BY g)),
       array_agg(1000 + g % 5::int8 ORDER BY g), pgsentinel_pack(array_fill(1::int8, ARRAY[200])),
       pgsentinel_pack(array_fill(1::int8, ARRAY[200])), array_fill(1.0::float8, ARRAY[200]),
       pgsentinel_pack(array_fill(NULL::int8, ARRAY[200])), array_fill(NULL::float8, ARRAY[200]),
       pgsentinel_pack(array_fill(NULL::int8, ARRAY[200])), pgsentinel_pack(array_fill(NULL::int8, ARRAY[200])),
       pgsentinel_pack(array_fill(NULL::int8, ARRAY[200])), pgsentinel_pack(array_fill(NULL::int8, ARRAY[200])),
       pgsentinel_pack(array_fill(NULL::int8, ARRAY[200])), pgsentinel_pack(array_fill(NULL::int8, ARRAY[200])),
       pgsentinel_pack(array_fill(NULL::int8, ARRAY[200])), array_fill(10::oid, ARRAY[200]),
       array_fill(1::oid, ARRAY[200]), array_fill(true, ARRAY[200]),
       array_fill(false, ARRAY[200]))
FROM generate_series(1, 200) g,
     LATERAL (SELECT '2020-01-01 10:00'::timestamptz + g * interval '1 min') x(t);
INSERT INTO pgsentinel_fleet_statement_text (server_id, feed, day, queryid, dbid, userid, text_id)
SELECT :rep_srv, 0, '2020-01-01', 1000 + q, 1, 10, (SELECT min(x.text_id) FROM pgs_rep_t x)
FROM generate_series(0, 4) q;
-- (a backend's counts not sent yet include earlier transactions': the
-- difference, inside one transaction, which sends none)
SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) AS text_scans_before
FROM pg_stat_xact_user_tables WHERE relname ~ '^pgsentinel_fleet_(statement_)?text_' \gset
SELECT count(*) AS deltas_read, sum(calls) AS calls
FROM pgsentinel_fleet_statements_in('pgs_rep_copy', '-infinity', 'infinity');
SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) - :text_scans_before AS text_scans
FROM pg_stat_xact_user_tables WHERE relname ~ '^pgsentinel_fleet_(statement_)?text_';
-- Every statement's calls in a window, each reading's delta (1 call, its
-- interval the 10 s before it) counted for its part in the window: from
-- 10:00:55 to 10:10:57, the reading of 10:01 counts half, the one of 10:11
-- 0.7 (both of 1001), those between whole: 1001 made 2.2 calls, the
-- others 2; ordered by calls, then query id.
SELECT rank, queryid, round((calls_per_s * 602)::numeric, 3) AS calls, ms_per_call,
       rows_per_call, round(exec_s::numeric, 4) AS exec_s, round(pct::numeric, 2) AS pct,
       round(counted::numeric, 3) AS counted, query IS NOT NULL AS has_text
FROM pgsentinel_top_calls('2020-01-01 10:00:55', '2020-01-01 10:10:57', 10, 'calls', 'pgs_rep_copy');
-- by execution time, the top 2
SELECT rank, queryid FROM pgsentinel_top_calls('2020-01-01 10:00:55', '2020-01-01 10:10:57', 2, server => 'pgs_rep_copy');
ROLLBACK;
-- bad input: an unknown order, no statement asked for
SELECT * FROM pgsentinel_top_calls(by => 'cpu');
SELECT * FROM pgsentinel_top_calls(n => 0);
CREATE FUNCTION pg_temp.pgs_plan(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE p jsonb;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) ' || q INTO p;
    RETURN p;
END $$;
SELECT string_agg(DISTINCT CASE WHEN j->>'Join Type' IN ('Left', 'Right') THEN 'outer'
                                 ELSE j->>'Join Type' END, ',') AS texts_join
FROM jsonb_path_query(pg_temp.pgs_plan($$SELECT count(*) FROM pgsentinel_fleet_statements
                                          WHERE server = 'pgs_rep_copy' AND query IS NOT NULL$$),
                      'strict $.** ? (exists(@."Join Type"))') j
WHERE jsonb_path_exists(j, '$.** ? (@."Relation Name" like_regex "^pgsentinel_fleet_text")')
  AND NOT jsonb_path_exists(j, '$."Plans".** ? (exists(@."Join Type")
                                && exists(@.** ? (@."Relation Name" like_regex "^pgsentinel_fleet_text")))');
-- the rollups are read: one changed rollup changes the answer
UPDATE pgsentinel_fleet_rollup_hour SET db_time = db_time + 1
WHERE server_id = :rep_srv AND bucket = '2020-01-01 14:00' AND wait_event = 'DataFileRead';
SELECT pg_temp.pgs_same($$SELECT * FROM pgsentinel_aas('2020-01-01 13:00', '2020-01-01 16:00', server => 'pgs_rep_copy')$$) AS fleet_hour_changed;
UPDATE pgsentinel_fleet_rollup_hour SET db_time = db_time - 1
WHERE server_id = :rep_srv AND bucket = '2020-01-01 14:00' AND wait_event = 'DataFileRead';
CREATE TEMP TABLE pgs_rep_bm_kept AS
SELECT * FROM pgsentinel_fleet_rollup_blocking_minute_batch
WHERE server_id = :rep_srv AND bucket = '2020-01-01 14:20';
DELETE FROM pgsentinel_fleet_rollup_blocking_minute_batch
WHERE server_id = :rep_srv AND bucket = '2020-01-01 14:20';
SELECT pg_temp.pgs_same($$SELECT * FROM pgsentinel_blocking_trees('2020-01-01 14:00:10', '2020-01-01 14:50:50', server => 'pgs_rep_copy')$$) AS fleet_blocking_minute_changed;
INSERT INTO pgsentinel_fleet_rollup_blocking_minute_batch SELECT * FROM pgs_rep_bm_kept;
DROP TABLE pgs_rep_bm_kept;
SELECT pgsentinel_fleet_remove('pgs_rep_copy', keep_history => false);
SELECT count(*) AS copy_tables_left FROM pg_class WHERE relname ~ ('^pgsentinel_fleet_.*_' || :rep_srv || '(_|$)');

-- An ordinary role runs the reports (the views hide other roles' waits
-- and texts from it).
CREATE ROLE regress_pgs_report_reader;
SET ROLE regress_pgs_report_reader;
SELECT key, db_time FROM pgsentinel_aas('2020-01-01 10:00', '2020-01-01 10:02', by => 'wait_class');
SELECT length(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'html')) > 0 AS html;
-- the same as the rows show it: waits and statements hidden alike
SELECT key, db_time FROM pgsentinel_aas('2020-01-01 13:59:45', '2020-01-01 15:00:15', by => 'wait_event');
SELECT f, pg_temp.pgs_same(format(q, '2020-01-01 13:59:45', '2020-01-01 15:00:15')) AS result
FROM (VALUES ('aas wait_event', 'SELECT * FROM pgsentinel_aas(%L, %L, ''wait_event'')'),
             ('series statement', 'SELECT * FROM pgsentinel_aas_series(%L, %L, ''1 minute'', ''statement'')'),
             ('top backend_type', 'SELECT * FROM pgsentinel_top(%L, %L, ''backend_type'')'),
             ('top statements', 'SELECT * FROM pgsentinel_top_statements(%L, %L)'),
             ('blocking trees', 'SELECT * FROM pgsentinel_blocking_trees(%L, %L)'),
             ('role alice', 'SELECT * FROM pgsentinel_aas(%L, %L, ''wait_class'', username => ''alice'')'))
     AS v(f, q);
RESET ROLE;
DROP ROLE regress_pgs_report_reader;

-- Incidents: the pile-up of 16:03-16:05 against a normal of one active
-- session, with its top wait, statement, application and root blocker;
-- the blip of two samples is not one (unless min_samples allows it).
SELECT incident, started, ended, duration, samples, baseline, threshold,
       round(aas::numeric, 2) AS aas, peak, top_wait, round(top_wait_pct::numeric, 1) AS pct,
       queryid, query, application, root_blocker, blocker
FROM pgsentinel_incidents('2020-01-01 16:00', '2020-01-01 16:10');
SELECT incident, started, ended, samples
FROM pgsentinel_incidents('2020-01-01 16:00', '2020-01-01 16:10', min_samples => 2);
SELECT count(*) AS no_incident_in_normal_times
FROM pgsentinel_incidents('2020-01-01 16:00', '2020-01-01 16:03');
-- samples weigh the time they stand for
SELECT started, ended, samples, baseline, threshold
FROM pgsentinel_incidents('2020-01-01 17:00', '2020-01-01 17:10');
SELECT count(*) AS no_incident_without_samples
FROM pgsentinel_incidents('2020-01-01 18:00', '2020-01-01 19:00');
-- A quiet day's 22:00-22:10 (issue 53), every second: no active session
-- (median 0, threshold 1), blips of 2 sessions for one sample now and then
-- (a WAL flush), close enough together to chain under gap at 22:00:30-38
-- and 22:08:10-19, and within gap before and after two episodes: 5
-- sessions 22:02:00-22:02:59 and 3 sessions 22:06:00-22:06:39.  Blips of 1
-- session do not even depart.  Exactly the two episodes, from their first
-- sample to their last.  With min_samples => 1 blips are runs too: those
-- within gap of an episode stretch it, and the chains of blips alone are
-- not shown, their average being under the threshold.
-- (Added after the rollups were made: only the samples are read.)
INSERT INTO pgs_rep_samples
SELECT '2020-01-01 22:00:00+00'::timestamptz + i * interval '1 s', 20000 + i, 1, 1
FROM generate_series(0, 599) i;
INSERT INTO pgs_rep_rows
SELECT t, a, 9001, NULL::int, NULL::text, NULL::int[]
FROM pgs_rep_samples, unnest(CASE
        WHEN id BETWEEN 20120 AND 20179 THEN '{1,2,4,5,6}'::int[]
        WHEN id BETWEEN 20360 AND 20399 THEN '{1,2,5}'
        WHEN id IN (20030, 20034, 20038, 20112, 20116, 20185, 20189,
                    20355, 20405, 20410, 20490, 20493, 20496, 20499) THEN '{1,2}'
        WHEN id IN (20240, 20245, 20300) THEN '{1}'
        ELSE '{}' END) a
WHERE id BETWEEN 20000 AND 20599;
UPDATE pgs_rep_rows r SET wait = m.wait_event_id FROM pgs_rep_we m
WHERE r.wait = m.code AND r.t >= '2020-01-01 22:00+00';
INSERT INTO pgs_rep_s
SELECT s.t, s.id, s.period, s.weight,
       count(r.activity) FILTER (WHERE r.activity <> 3),  -- 3: carol, idle
       array_agg(r.activity ORDER BY r.activity) FILTER (WHERE r.activity IS NOT NULL),
       array_agg(r.wait ORDER BY r.activity) FILTER (WHERE r.activity IS NOT NULL),
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(CASE WHEN r.blockerpid IS NULL THEN 0 ELSE 1 END ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(r.blockerpid ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(r.blocker_state ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(CASE WHEN r.blockerpid IS NULL THEN NULL ELSE 10 END::oid ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(coalesce(r.blocking, '{}')::text ORDER BY r.activity) END
FROM pgs_rep_samples s LEFT JOIN pgs_rep_rows r ON r.t = s.t
WHERE s.id BETWEEN 20000 AND 20599
GROUP BY s.t, s.id, s.period, s.weight;
INSERT INTO pgsentinel_archive_batch
SELECT s.sample_time, s.sample_time,
       pgsentinel_sample_pack(ARRAY[s.sample_id], ARRAY[0::int8], ARRAY[s.sample_period],
                              ARRAY[s.weight], ARRAY[s.active_sessions],
                              ARRAY[s.blockers IS NOT NULL]), r.*
  FROM pgs_rep_s s
  LEFT JOIN LATERAL (
       SELECT pgsentinel_batch_pack(pgsentinel_pack(array_agg(1 ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.session_id ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(u.w ORDER BY a.session_id)), array_agg(a.state ORDER BY a.session_id),
              pgsentinel_pack(array_agg(pgsentinel_us_between(s.sample_time, a.xact_start) ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(pgsentinel_us_between(coalesce(a.xact_start, s.sample_time), a.query_start)
                        ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(pgsentinel_us_between(coalesce(a.query_start, a.xact_start, s.sample_time),
                                              a.state_change) ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.backend_xid ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.backend_xmin ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.top_level_query_id ORDER BY a.session_id)),
              array_agg(a.top_level_query_values ORDER BY a.session_id),
              pgsentinel_pack(array_agg(a.query_id ORDER BY a.session_id)),
              array_agg(a.query_values ORDER BY a.session_id),
              array_agg(a.cmdtype ORDER BY a.session_id),
              array_agg(a.queryid ORDER BY a.session_id),
              array_agg(a.nested_queryid ORDER BY a.session_id),
              pgsentinel_pack(s.blockers), pgsentinel_pack(s.blockerpids), s.blocker_states, s.blocker_usesysids, s.blocking_pids)
         FROM unnest(s.activity_ids, s.wait_event_ids) u(a, w)
         JOIN pgs_rep_a a ON a.activity_id = u.a) r ON true
 WHERE s.sample_id BETWEEN 20000 AND 20599;
SELECT incident, started, ended, duration, samples, baseline, threshold,
       round(aas::numeric, 2) AS aas, peak
FROM pgsentinel_incidents('2020-01-01 22:00', '2020-01-01 22:10');
SELECT incident, started, ended, samples, round(aas::numeric, 2) AS aas
FROM pgsentinel_incidents('2020-01-01 22:00', '2020-01-01 22:10', min_samples => 1);
-- a threshold over the episodes' load: none
SELECT count(*) AS none_above_min_excess_5
FROM pgsentinel_incidents('2020-01-01 22:00', '2020-01-01 22:10', min_excess => 5);
SELECT * FROM pgsentinel_incidents('2020-01-01 16:00', '2020-01-01 16:10', min_excess => -1);
SELECT * FROM pgsentinel_incidents('2020-01-01 16:00', '2020-01-01 16:10', min_samples => 0);
SELECT * FROM pgsentinel_incidents('2020-01-01 16:00', '2020-01-01 16:10', gap => '-1 s');
SELECT * FROM pgsentinel_incidents('2020-01-01 16:10', '2020-01-01 16:00');

-- What is unusual: the hour 12:00-13:00 of four Wednesdays (hourly
-- rollups only).  The weeks of 8, 15 and 22 January: CPU 0.5 AAS, IO 0.3
-- (queryid 22).  29 January: CPU unchanged, IO 0.7 (more than doubled),
-- and a statement never seen before, 44 on Lock, 0.2.  1 January has no
-- sample at that hour: not a week of the usual.
INSERT INTO pgsentinel_rollup_hour (bucket, datname, usesysid, usename,
       application_name, backend_type, wait_event_type, wait_event, queryid,
       db_time, rows)
SELECT d + time '12:00', 'shop', 10, v.usename, v.app, 'client backend', v.t, v.e, v.q,
       CASE WHEN d = '2020-01-29' THEN v.now ELSE v.before END, 1
FROM unnest('{2020-01-08,2020-01-15,2020-01-22,2020-01-29}'::date[]) d,
     (VALUES ('alice', 'web', 'CPU', 'CPU', 11, 1800, 1800),
             ('bob', 'batch', 'IO', 'DataFileRead', 22, 1080, 2520),
             ('dave', 'web', 'Lock', 'transactionid', 44, 0, 720))
     AS v(usename, app, t, e, q, before, now)
WHERE CASE WHEN d = '2020-01-29' THEN v.now ELSE v.before END > 0;
INSERT INTO pgsentinel_rollup_hour_observed (bucket, samples, observed, peak)
SELECT d + time '12:00', 360, 3600, 3
FROM unnest('{2020-01-08,2020-01-15,2020-01-22,2020-01-29}'::date[]) d;
SELECT dimension, key, description, round(aas::numeric, 2) AS aas,
       round(usual::numeric, 2) AS usual, round(spread::numeric, 2) AS spread,
       round(ratio::numeric, 2) AS ratio, weeks_seen, unusual
FROM pgsentinel_unusual('2020-01-29 13:00');
-- an unchanged week: nothing unusual
SELECT count(*) FILTER (WHERE unusual) AS unusual, max(weeks_seen) AS weeks_seen
FROM pgsentinel_unusual('2020-01-22 13:00');
-- nothing to compare with: nothing unusual
SELECT count(*) FILTER (WHERE unusual) AS unusual, max(weeks_seen) AS weeks_seen
FROM pgsentinel_unusual('2020-01-08 13:00', weeks => 1);
-- pgsentinel's own workers are not load unless asked for (rollups and
-- rows alike), and the report shows their time apart.
SELECT round(db_time::numeric, 1) AS db_time_without_archiver
FROM pgsentinel_aas('2020-01-01 16:00', '2020-01-01 16:10');
SELECT round(db_time::numeric, 1) AS archiver_asked_for
FROM pgsentinel_aas('2020-01-01 16:00', '2020-01-01 16:10', backend => 'pgsentinel archiver');
SELECT round(db_time::numeric, 1) AS archiver_from_rows
FROM pgsentinel_aas('2020-01-01 16:08:10', '2020-01-01 16:08:30', backend => 'pgsentinel archiver');
SELECT round(db_time::numeric, 1) AS rows_without_archiver
FROM pgsentinel_aas('2020-01-01 16:08:10', '2020-01-01 16:08:30');
SELECT count(*) AS archiver_in_tops
FROM pgsentinel_top('2020-01-01 16:00', '2020-01-01 16:10', 'application') WHERE key = 'pgsentinel archiver';
SELECT line FROM regexp_split_to_table(
    pgsentinel_report('2020-01-01 16:00', '2020-01-01 16:10'), E'\n') AS line
WHERE line ~ 'pgsentinel itself';

-- Both at the top of the report after the findings, in each format.
SELECT line FROM regexp_split_to_table(
    pgsentinel_report('2020-01-01 16:00', '2020-01-01 16:10', cpus => 2), E'\n') WITH ORDINALITY AS l(line, n)
WHERE n BETWEEN 3 AND 14;
SELECT line FROM regexp_split_to_table(
    pgsentinel_report('2020-01-29 12:00', '2020-01-29 13:00'), E'\n') AS line
WHERE line ~ '^== Unusual|^  (wait class|statement) ';
SELECT r->'incidents'->0->>'started' AS started, r->'incidents'->0->>'root_blocker' AS root_blocker,
       r->'unusual'->>'weeks_seen' AS weeks_seen
FROM (SELECT pgsentinel_report('2020-01-01 16:00', '2020-01-01 16:10', 'json')::jsonb AS r) x;
SELECT h ~ '<h2>Incidents</h2><table>.*16:03:00.*Lock:transactionid.*carol' AS html_incident,
       h ~ '<h2>Unusual now</h2><p class="none">Nothing to compare' AS html_unusual
FROM pgsentinel_report('2020-01-01 16:00', '2020-01-01 16:10', 'html') h;
SELECT h ~ '<h2>Unusual now</h2><table>.*IO.*0\.70.*0\.30' AS html_unusual
FROM pgsentinel_report('2020-01-29 12:00', '2020-01-29 13:00', 'html') h;
SELECT * FROM pgsentinel_unusual('2020-01-29 13:00', weeks => 0);
SELECT * FROM pgsentinel_unusual('2020-01-29 13:00', min_aas => -0.5);
SELECT * FROM pgsentinel_unusual(NULL);

-- Findings (issue 53): the report opens with what took the most DB time
-- and what to do, each finding at least 10% of the window's DB time and
-- 0.05 active sessions, at most 5, costliest first.
CREATE TEMP VIEW pgs_rep_findings AS
SELECT r.since, r.until, r.cpus, x.n, x.f AS finding
FROM (VALUES ('2020-01-01 10:00'::timestamptz, '2020-01-01 10:02'::timestamptz, 2),
             ('2020-01-01 16:00', '2020-01-01 16:10', 2),
             ('2020-01-01 17:00', '2020-01-01 17:10', 1),
             ('2020-01-01 17:00', '2020-01-01 17:10', 4),
             ('2020-01-01 10:00:10', '2020-01-01 10:00:20', 2),
             ('2020-01-01 10:01', '2020-01-01 10:02', 2)) AS r(since, until, cpus),
     LATERAL regexp_split_to_table(split_part(split_part(
         pgsentinel_report(r.since, r.until, cpus => r.cpus),
         E'== Findings (the causes of the most DB time, and what to do)\n', 2), E'\n\n', 1), E'\n')
         WITH ORDINALITY AS x(f, n);
-- 10:00-10:02: alice's SELECT on CPU (50 s of 83), the reads from disk
-- and bob's statement that made them (25 s each); the lock queue behind
-- carol, 8 s (9.6%), is under 10%, and CPU (0.83 sessions) under 2 CPUs.
-- 16:00-16:10: the pile-up behind carol, idle in transaction: 240 s of
-- 844 (its waiters' UPDATE and Lock waits are not findings of their own:
-- the root is their cause).  17:00-17:10: 2 sessions on CPU on average
-- for 1 CPU: 600 s of the 1200 s on CPU were beyond it; not with 4 CPUs.
-- A window without load and one not observed say so.
SELECT to_char(since, 'HH24:MI:SS') AS since, cpus, n, finding
FROM pgs_rep_findings ORDER BY since, cpus, n;
-- as JSON: kind, cost and share of each
SELECT x->>'kind' AS kind, round((x->>'db_time')::numeric, 1) AS db_time,
       round((x->>'pct')::numeric, 1) AS pct
FROM jsonb_array_elements(pgsentinel_report('2020-01-01 16:00', '2020-01-01 16:10', 'json',
                                            cpus => 2)::jsonb->'findings') x;
SELECT pgsentinel_report('2020-01-01 10:01', '2020-01-01 10:02', 'json', cpus => 2)::jsonb->'findings'
    AS unobserved;
-- as HTML: first, before the incidents
SELECT strpos(h, '<h2>') = strpos(h, '<h2>Findings</h2>') AS html_findings_first,
       h ~ '<h2>Findings</h2><ol class="findings"><li>Statement 11 [^<]*</li><li>Session 103 \(carol, application psql, client 10\.0\.0\.3/32\) sat idle in transaction holding a lock[^<]*</li></ol><h2>Incidents</h2>' AS html_findings,
       q ~ '<h2>Findings</h2><p class="none">No finding: no session was active in the 10 s observed\.</p>' AS html_quiet
FROM pgsentinel_report('2020-01-01 16:00', '2020-01-01 16:10', 'html', cpus => 2) h,
     pgsentinel_report('2020-01-01 10:00:10', '2020-01-01 10:00:20', 'html', cpus => 2) q;
-- A lock queue behind an active root: 23:00-23:10, every second, alice on
-- CPU throughout (600 s); 23:02:00-23:03:59 frank's migration rewrites a
-- table (ALTER TABLE, reading from disk: 120 s) while bob, dave and erin
-- wait for it on Lock:relation (360 s).  Then a quiet 23:10-23:20: 40 s
-- of load (0.07 active sessions), nothing worth a finding.  (Added after
-- the rollups were made: read from rows.)
-- (Lock:relation under an id far above the archiver's, which names wait
-- events from the highest id up, unless it named it first)
INSERT INTO pgsentinel_archive_wait_event VALUES (99005, 'Lock', 'relation')
ON CONFLICT DO NOTHING;
INSERT INTO pgs_rep_we
SELECT 9005, w.wait_event_id FROM pgsentinel_archive_wait_event w
WHERE w.wait_event_type = 'Lock' AND w.wait_event = 'relation';
INSERT INTO pgsentinel_archive_text VALUES
    ('2020-01-01', 5, 5, 'ALTER TABLE accounts ALTER COLUMN balance TYPE numeric(20,2) USING balance::numeric(20,2)');
INSERT INTO pgsentinel_archive_session
    (day, session_id, hash, datid, datname, pid, usesysid, usename,
     application_name, client_addr, backend_start, backend_type)
VALUES ('2020-01-01', 8, 8, 1, 'shop', 108, 10, 'frank', 'migrate', '10.0.0.4/32',
        '2020-01-01 09:00+00', 'client backend');
INSERT INTO pgs_rep_a
    (day, activity_id, hash, session_id, state, top_level_query_id,
     query_id, cmdtype, queryid)
VALUES ('2020-01-01', 8, 8, 8, 'active', 5, 5, 'ALTER', 55);
INSERT INTO pgs_rep_samples
SELECT '2020-01-01 23:00:00+00'::timestamptz + i * interval '1 s', 21000 + i, 1, 1
FROM generate_series(0, 1199) i;
INSERT INTO pgs_rep_rows
SELECT t, 1, 9001, NULL::int, NULL::text, NULL::int[] FROM pgs_rep_samples
WHERE id BETWEEN 21000 AND 21599
UNION ALL
SELECT t, 8, 9002, NULL, NULL, NULL FROM pgs_rep_samples WHERE id BETWEEN 21120 AND 21239
UNION ALL
SELECT t, a, 9005, 108, 'active', '{108}' FROM pgs_rep_samples, unnest('{4,5,6}'::int[]) a
WHERE id BETWEEN 21120 AND 21239
UNION ALL
SELECT t, 1, 9001, NULL, NULL, NULL FROM pgs_rep_samples WHERE id BETWEEN 21600 AND 21619
UNION ALL
SELECT t, 2, 9002, NULL, NULL, NULL FROM pgs_rep_samples WHERE id BETWEEN 21700 AND 21719;
UPDATE pgs_rep_rows r SET wait = m.wait_event_id FROM pgs_rep_we m
WHERE r.wait = m.code AND r.t >= '2020-01-01 23:00+00';
INSERT INTO pgs_rep_s
SELECT s.t, s.id, s.period, s.weight,
       count(r.activity) FILTER (WHERE r.activity <> 3),  -- 3: carol, idle
       array_agg(r.activity ORDER BY r.activity) FILTER (WHERE r.activity IS NOT NULL),
       array_agg(r.wait ORDER BY r.activity) FILTER (WHERE r.activity IS NOT NULL),
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(CASE WHEN r.blockerpid IS NULL THEN 0 ELSE 1 END ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(r.blockerpid ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(r.blocker_state ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(CASE WHEN r.blockerpid IS NULL THEN NULL ELSE 10 END::oid ORDER BY r.activity) END,
       CASE WHEN bool_or(r.blockerpid IS NOT NULL) THEN
         array_agg(coalesce(r.blocking, '{}')::text ORDER BY r.activity) END
FROM pgs_rep_samples s LEFT JOIN pgs_rep_rows r ON r.t = s.t
WHERE s.id BETWEEN 21000 AND 22199
GROUP BY s.t, s.id, s.period, s.weight;
INSERT INTO pgsentinel_archive_batch
SELECT s.sample_time, s.sample_time,
       pgsentinel_sample_pack(ARRAY[s.sample_id], ARRAY[0::int8], ARRAY[s.sample_period],
                              ARRAY[s.weight], ARRAY[s.active_sessions],
                              ARRAY[s.blockers IS NOT NULL]), r.*
  FROM pgs_rep_s s
  LEFT JOIN LATERAL (
       SELECT pgsentinel_batch_pack(pgsentinel_pack(array_agg(1 ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.session_id ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(u.w ORDER BY a.session_id)), array_agg(a.state ORDER BY a.session_id),
              pgsentinel_pack(array_agg(pgsentinel_us_between(s.sample_time, a.xact_start) ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(pgsentinel_us_between(coalesce(a.xact_start, s.sample_time), a.query_start)
                        ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(pgsentinel_us_between(coalesce(a.query_start, a.xact_start, s.sample_time),
                                              a.state_change) ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.backend_xid ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.backend_xmin ORDER BY a.session_id)),
              pgsentinel_pack(array_agg(a.top_level_query_id ORDER BY a.session_id)),
              array_agg(a.top_level_query_values ORDER BY a.session_id),
              pgsentinel_pack(array_agg(a.query_id ORDER BY a.session_id)),
              array_agg(a.query_values ORDER BY a.session_id),
              array_agg(a.cmdtype ORDER BY a.session_id),
              array_agg(a.queryid ORDER BY a.session_id),
              array_agg(a.nested_queryid ORDER BY a.session_id),
              pgsentinel_pack(s.blockers), pgsentinel_pack(s.blockerpids), s.blocker_states, s.blocker_usesysids, s.blocking_pids)
         FROM unnest(s.activity_ids, s.wait_event_ids) u(a, w)
         JOIN pgs_rep_a a ON a.activity_id = u.a) r ON true
 WHERE s.sample_id BETWEEN 21000 AND 22199;
-- The root's statement is cut at a word boundary; alice's SELECT (600 s),
-- the queue behind frank (360 s), the reads from disk and the ALTER that
-- made them (120 s each, 11% of 1080); the Lock:relation waits are the
-- queue's.  Then the quiet window.
SET pgsentinel_report.rollups = off;
SELECT to_char(r.since, 'HH24:MI') AS since, x.n, x.f AS finding
FROM (VALUES ('2020-01-01 23:00'::timestamptz, '2020-01-01 23:10'::timestamptz),
             ('2020-01-01 23:10', '2020-01-01 23:20')) AS r(since, until),
     LATERAL regexp_split_to_table(split_part(split_part(
         pgsentinel_report(r.since, r.until, cpus => 2),
         E'== Findings (the causes of the most DB time, and what to do)\n', 2), E'\n\n', 1), E'\n')
         WITH ORDINALITY AS x(f, n)
ORDER BY 1, 2;
RESET pgsentinel_report.rollups;
DROP VIEW pgs_rep_findings;

DROP VIEW pgs_rep_av;
DROP TABLE pgs_rep_s, pgs_rep_a, pgs_rep_b, pgs_rep_se, pgs_rep_t, pgs_rep_rm, pgs_rep_om, pgs_rep_rh, pgs_rep_oh,
    pgs_rep_sh, pgs_rep_bh, pgs_rep_sm, pgs_rep_bm;
RESET extra_float_digits;
RESET timezone;
RESET datestyle;

-- The text report's lines: white space made one space, control characters
-- shown, a long text cut after its last whole word that fits (never in a
-- word: "... LIMI"), a single word too long cut where it must.
SELECT w, pgsentinel_text_line(t, w) AS line,
       length(pgsentinel_text_line(t, w)) <= w AS fits
FROM (VALUES (E'SELECT abalance\n  FROM pgbench_accounts WHERE aid = $1 LIMIT 1', 100),
             (E'SELECT abalance\n  FROM pgbench_accounts WHERE aid = $1 LIMIT 1', 60),
             ('SELECT abalance FROM pgbench_accounts WHERE aid = $1 LIMIT 1', 59),
             (E'UPDATE t\u0001 SET x = 1', 30),
             ('SELECT_a_very_long_identifier_with_no_space_in_it', 20),
             ('', 10), (NULL, 10)) AS v(t, w)
ORDER BY w DESC, t;

-- A statement's delta in a window: the share of its interval in the
-- window (spread evenly), 0 outside, NULL for an empty interval.  Window
-- 10:00-10:01: an interval from 09:59:30 to 10:00:30 is half in it, one
-- ending after it (10:00:45-10:01:15) half, one inside whole, one before
-- it nothing, as one ending where the window starts.
SELECT start, stop, pgsentinel_window_share('2020-01-01 10:00', '2020-01-01 10:01', start, stop) AS share
FROM (VALUES ('2020-01-01 09:59:30'::timestamptz, '2020-01-01 10:00:30'::timestamptz),
             ('2020-01-01 10:00:45', '2020-01-01 10:01:15'),
             ('2020-01-01 10:00:10', '2020-01-01 10:00:20'),
             ('2020-01-01 09:58:00', '2020-01-01 09:59:00'),
             ('2020-01-01 09:59:00', '2020-01-01 10:00:00'),
             ('2020-01-01 10:00:10', '2020-01-01 10:00:10'),
             (NULL, '2020-01-01 10:00:10')) AS v(start, stop)
ORDER BY start NULLS LAST, stop;
