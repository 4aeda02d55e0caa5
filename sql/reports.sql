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
SET datestyle = 'ISO, YMD';
SET extra_float_digits = 0;

CREATE TABLE pgs_rep_s PARTITION OF pgsentinel_archive_sample
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE pgs_rep_a PARTITION OF pgsentinel_archive_activity
    FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE pgs_rep_t PARTITION OF pgsentinel_archive_text
    FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
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
UPDATE pgs_rep_rows r SET wait = m.wait_event_id FROM pgs_rep_we m WHERE r.wait = m.code;
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

-- Average active sessions over the window: 88 s over the 60 s observed;
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

-- The trailing windows ending at 10:01: peak 4 sessions (10:00:07-09).
SELECT period, window_start, db_time, round(aas::numeric, 4) AS aas, peak, observed,
       round(coverage::numeric, 6) AS coverage
FROM pgsentinel_periods('2020-01-01 10:01');

-- Top wait events, sessions, statements (queryid 33 is both the idle
-- root's and its waiter's: half Client, half Lock).
SELECT rank, key, description, db_time, round(pct::numeric, 2) AS pct, wait_profile
FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02');
SELECT rank, key, description, db_time, wait_profile
FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', 'session', 3);
SELECT rank, key, db_time FROM pgsentinel_top('2020-01-01 10:00', '2020-01-01 10:02', 'role');
SELECT rank, queryid, query, db_time, round(aas::numeric, 4) AS aas, wait_profile,
       calls_per_s, ms_per_call, rows_per_call
FROM pgsentinel_top_statements('2020-01-01 10:00', '2020-01-01 10:02');

-- The blocking tree: the idle-in-transaction root 103, 104 behind it,
-- 105 behind 104 (listed twice by pg_blocking_pids(): counted once).
SELECT root_pid, depth, pid, blocked_by, usename, state, wait_event, query,
       samples, sessions, levels, db_time, aas
FROM pgsentinel_blocking_trees('2020-01-01 10:00', '2020-01-01 10:02');
SELECT count(*) AS trees FROM pgsentinel_blocking_trees('2020-01-01 10:10', '2020-01-01 10:20');

-- Two periods of 20 s, both fully observed; then a period with data
-- against one without: no difference is invented.
SELECT key, aas_1, aas_2, round(diff::numeric, 4) AS diff,
       round(pct_of_change::numeric, 2) AS pct_of_change, coverage_1, coverage_2
FROM pgsentinel_compare('2020-01-01 10:00', '2020-01-01 10:00:20',
                        '2020-01-01 10:00:20', '2020-01-01 10:00:40');
SELECT key, round(aas_1::numeric, 4) AS aas_1, aas_2, diff, pct_of_change,
       coverage_1, coverage_2
FROM pgsentinel_compare('2020-01-01 10:00', '2020-01-01 10:01',
                        '2020-01-01 10:01', '2020-01-01 10:02', 'wait_event');

-- The psql chart, plain and coloured (the escape shown as ^[).
SELECT * FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02', '10 s', cpus => 2);
SELECT max(length(c)) <= 80 AS fits_80_columns
FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:02') c;
SELECT replace(c, chr(27), '^[') AS coloured
FROM pgsentinel_chart('2020-01-01 10:00', '2020-01-01 10:00:20', '10 s', colour => true) c;

-- The report as text (without its line naming the server and the time).
SELECT line FROM regexp_split_to_table(
    pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', cpus => 2), E'\n') line
WHERE line !~ '^database .* generated';
-- As JSON: every section.
SELECT jsonb_object_keys(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02',
                                           'json')::jsonb) AS section ORDER BY 1;
SELECT r->'load' AS load, jsonb_array_length(r->'series') AS series_rows,
       r->'top_statements'->0->>'queryid' AS top_statement,
       r->'blocking_trees'->0->>'root_pid' AS root_blocker
FROM (SELECT pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'json')::jsonb AS r) x;
-- As HTML: one self-contained page with the chart, one area per class
-- and the CPU line; nothing to fetch.
SELECT (regexp_match(h, '^<!DOCTYPE html>')) IS NOT NULL AS html,
       (SELECT count(*) FROM regexp_matches(h, '<svg ', 'g')) AS svgs,
       (SELECT array_agg(m[1]) FROM regexp_matches(h, '<path class="series" data-class="([A-Za-z]+)"', 'g') m)
           AS areas,
       (SELECT count(*) FROM regexp_matches(h, '<line class="cpus"', 'g')) AS cpu_lines,
       h ~* '(src=|href=|url\(|@import|<script)' AS fetches_something,
       h ~ 'root_pid|<th>root</th>' AND h ~ 'idle in transaction' AS names_root_state
FROM (SELECT pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'html', cpus => 2) AS h) x;
SELECT pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'pdf');

-- The CPU count: the setting wins.
SET pgsentinel_report.cpus = 3;
SELECT pgsentinel_cpu_count();
RESET pgsentinel_report.cpus;
SELECT pgsentinel_cpu_count() IS NULL OR pgsentinel_cpu_count() > 0 AS sane;

-- An ordinary role runs the reports (the views hide other roles' waits
-- and texts from it).
CREATE ROLE regress_pgs_report_reader;
SET ROLE regress_pgs_report_reader;
SELECT key, db_time FROM pgsentinel_aas('2020-01-01 10:00', '2020-01-01 10:02', by => 'wait_class');
SELECT length(pgsentinel_report('2020-01-01 10:00', '2020-01-01 10:02', 'html')) > 0 AS html;
RESET ROLE;
DROP ROLE regress_pgs_report_reader;

DROP TABLE pgs_rep_s, pgs_rep_a, pgs_rep_t;
RESET extra_float_digits;
RESET timezone;
RESET datestyle;
