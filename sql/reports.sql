--
-- The reports (docs/reports.md) over synthetic archive rows of 2020-01-01
-- (UTC), far older than anything in the ring, with hand-computed results.
--
-- 10:00:00-10:00:20  20 samples every second (weight 1); 10 of them empty.
--   pid 101 (alice, web)  CPU in the 10 first samples
--   pid 102 (bob, batch)  IO:DataFileRead in the 5 first
--   pid 103 (carol)       idle in transaction (Client:ClientRead), 10:00:05-09,
--                         holding the lock that
--   pid 104 (bob)         waits for (Lock:transactionid) 10:00:05-09, and
--   pid 105 (dave)        waits behind 104, 10:00:07-09 (pg_blocking_pids()
--                         lists 104 twice: soft and hard)
-- 10:00:20-10:00:40  the sampling period changed to 5 s: 4 samples, pid 101
--                    on CPU in each (weight 5)
-- 10:00:40-10:01:00  keep_one_in 10 (period 1 s): 2 samples kept, weight 10,
--                    pid 101 CPU and pid 102 IO in both
-- 10:01:00-10:02:00  the sampler was stopped: no sample at all
--
-- So over 10:00-10:02: observed 60 s of 120 (coverage 0.5); DB time 88 s:
-- CPU 10+20+20 = 50, IO 5+20 = 25, Lock 5+3 = 8, Client 5; aas 88/60.
--
SET timezone = 'UTC';
SET extra_float_digits = 0;

CREATE TABLE pgs_rep_s PARTITION OF pgsentinel_archive_sample
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE pgs_rep_a PARTITION OF pgsentinel_archive_activity
    FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE pgs_rep_t PARTITION OF pgsentinel_archive_text
    FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
INSERT INTO pgsentinel_archive_wait_event VALUES
    (9001, 'CPU', 'CPU'), (9002, 'IO', 'DataFileRead'),
    (9003, 'Lock', 'transactionid'), (9004, 'Client', 'ClientRead');
INSERT INTO pgsentinel_archive_text VALUES
    ('2020-01-01', 1, 1, 'SELECT * FROM orders WHERE id = $1'),
    ('2020-01-01', 2, 2, 'SELECT sum(amount) FROM ledger'),
    ('2020-01-01', 3, 3, 'UPDATE accounts SET balance = balance - $1 WHERE id = $2'),
    ('2020-01-01', 4, 4, 'DELETE FROM accounts WHERE id = $1');
-- (activity_id, pid, user, application, client, state, text = query id)
INSERT INTO pgsentinel_archive_activity
    (day, activity_id, hash, datid, datname, pid, usesysid, usename,
     application_name, client_addr, backend_start, state, top_level_query_id,
     query_id, cmdtype, queryid, backend_type)
SELECT '2020-01-01', v.id, v.id, 1, 'shop', v.pid, 10, v.usename, v.app,
       v.client, '2020-01-01 09:00+00', v.state, v.q, v.q, 'SELECT', v.q * 11,
       'client backend'
FROM (VALUES (1, 101, 'alice', 'web', '10.0.0.1/32', 'active', 1),
             (2, 102, 'bob', 'batch', '10.0.0.2/32', 'active', 2),
             (3, 103, 'carol', 'psql', '10.0.0.3/32', 'idle in transaction', 3),
             (4, 104, 'bob', 'batch', '10.0.0.2/32', 'active', 3),
             (5, 105, 'dave', 'web', '10.0.0.1/32', 'active', 4))
     AS v(id, pid, usename, app, client, state, q);

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
INSERT INTO pgsentinel_archive_sample
SELECT s.t, s.id, s.period, s.weight, count(r.activity),
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

-- What the history view reads back: 26 samples, 60 s observed; 36 rows, 88 s.
SELECT count(*) AS samples, sum(weight) AS observed
FROM pgsentinel_sample_history
WHERE sample_time >= '2020-01-01' AND sample_time < '2020-01-02';
SELECT count(*) AS rows, sum(weight) AS db_time
FROM pgsentinel_ash_history
WHERE ash_time >= '2020-01-01' AND ash_time < '2020-01-02';
