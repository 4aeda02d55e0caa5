--
-- The archive: every sample archived once, with its weight; the archived
-- rows are the ring's, column by column; average active sessions from the
-- archive equals the ring's over the same samples, at keep_one_in 1 and 10
-- and across a change of sampling period; the rollups are the sums of the
-- raw rows; the combined views count no sample twice.
--
-- The archiver runs every 100 ms with keep_one_in = 1 (test/pgsentinel.conf).
SELECT pgs_wait_for($$(SELECT archive_state FROM pgsentinel_status()) = 'ok'$$);

-- Wait until the archive's watermark has passed sample s.
CREATE FUNCTION pgs_wait_archived(s bigint) RETURNS void
LANGUAGE sql AS $$
  SELECT pgs_wait_for(format('(SELECT last_sample_id FROM pgsentinel_archive_state) >= %s', s))
$$;

-- Stay in this statement (active) until n samples of the ring saw it.
CREATE FUNCTION pgs_stay_active(n int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
    LOOP
        PERFORM pg_sleep(0.01);
        EXIT WHEN (SELECT count(*) FROM pg_active_session_history
                   WHERE pid = pg_backend_pid()
                     AND query_start = statement_timestamp()) >= n;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'this session was not sampled % times within 60 s', n;
        END IF;
    END LOOP;
END $$;

-- The samples (a, b] in which one statement of this session was seen,
-- narrowed to whole groups of `align` sample ids.
CREATE FUNCTION pgs_active_window(stmt text, align int, OUT a bigint, OUT b bigint)
LANGUAGE sql AS $$
  SELECT (min(sample_id) / align + 1) * align + 1, (max(sample_id) / align) * align
  FROM pg_active_session_history
  WHERE pid = pg_backend_pid() AND top_level_query = stmt
$$;

-- 1. keep_one_in = 1: the archive holds the ring's samples and rows.
SELECT pgs_stay_active(20);
SELECT max(sample_id) AS b FROM pgsentinel_samples() \gset
SELECT pgs_wait_archived(:b);
SELECT greatest((SELECT min(sample_id) FROM pgsentinel_samples()
                 WHERE sample_time >= pgsentinel_ring_start()),
                (SELECT min(sample_id) FROM pgsentinel_sample_archive)) AS a \gset

-- every sample, empty ones included, once, with its period as weight
SELECT count(*) = :b - :a + 1 AS no_sample_missing,
       count(DISTINCT sample_id) = count(*) AS no_sample_twice,
       bool_and(weight = sample_period) AS weight_is_period
FROM pgsentinel_sample_archive WHERE sample_id BETWEEN :a AND :b;
SELECT count(*) AS samples_that_differ FROM (
    (SELECT sample_id, sample_time, sample_period, active_sessions
     FROM pgsentinel_samples() WHERE sample_id BETWEEN :a AND :b
     EXCEPT ALL
     SELECT sample_id, sample_time, sample_period, active_sessions
     FROM pgsentinel_sample_archive WHERE sample_id BETWEEN :a AND :b)
    UNION ALL
    (SELECT sample_id, sample_time, sample_period, active_sessions
     FROM pgsentinel_sample_archive WHERE sample_id BETWEEN :a AND :b
     EXCEPT ALL
     SELECT sample_id, sample_time, sample_period, active_sessions
     FROM pgsentinel_samples() WHERE sample_id BETWEEN :a AND :b)) d;

-- every row, every column (the ring's rows weigh their period)
CREATE TEMP VIEW ring_rows AS
  SELECT ash_time, datid, datname, pid, leader_pid, usesysid, usename,
         application_name, client_addr, client_hostname, client_port,
         backend_start, xact_start, query_start, state_change,
         wait_event_type, wait_event, state, backend_xid, backend_xmin,
         top_level_query, query, cmdtype, queryid, nested_queryid,
         backend_type, blockers, blockerpid, blocker_state, sample_id,
         blocking_pids, sample_period, blocker_usesysid,
         sample_period AS weight, lock_type, lock_relation, lock_target,
         lock_mode, blocker_lock_modes
  FROM pg_active_session_history;
CREATE TEMP VIEW archive_rows AS
  SELECT ash_time, datid, datname, pid, leader_pid, usesysid, usename,
         application_name, client_addr, client_hostname, client_port,
         backend_start, xact_start, query_start, state_change,
         wait_event_type, wait_event, state, backend_xid, backend_xmin,
         top_level_query, query, cmdtype, queryid, nested_queryid,
         backend_type, blockers, blockerpid, blocker_state, sample_id,
         blocking_pids, sample_period, blocker_usesysid, weight, lock_type,
         lock_relation, lock_target, lock_mode, blocker_lock_modes
  FROM pgsentinel_ash_archive;
-- (a nested statement's rows among them: their text stored apart from the
-- top-level one)
SELECT count(*) > 0 AS rows_archived,
       count(*) FILTER (WHERE query <> top_level_query) > 0 AS nested_rows
FROM archive_rows WHERE sample_id BETWEEN :a AND :b AND pid = pg_backend_pid();
SELECT count(*) AS rows_that_differ FROM (
    (SELECT * FROM ring_rows WHERE sample_id BETWEEN :a AND :b
     EXCEPT ALL SELECT * FROM archive_rows WHERE sample_id BETWEEN :a AND :b)
    UNION ALL
    (SELECT * FROM archive_rows WHERE sample_id BETWEEN :a AND :b
     EXCEPT ALL SELECT * FROM ring_rows WHERE sample_id BETWEEN :a AND :b)) d;

-- the combined views: no sample counted twice, the ring's part whole
SELECT count(*) AS samples_counted_twice FROM (
    SELECT sample_time FROM pgsentinel_sample_history
    GROUP BY sample_time HAVING count(*) > 1) d;
SELECT count(*) AS rows_counted_twice FROM (
    SELECT sample_id, pid FROM pgsentinel_ash_history
    WHERE sample_id BETWEEN :a AND :b
    GROUP BY 1, 2 HAVING count(*) > 1) d;

-- the rollups are the sums of the raw rows they stand for: the minutes'
-- those before rolled_until, the end of the last minute rolled up (a
-- minute is rolled up once, by the step that archives past its end), the
-- hours' those before hours_rolled_until, the start of rolled_until's hour
-- or later (an hour is rolled up from its minutes once it has ended); the
-- archiver waits for the state's lock meanwhile
SELECT pgs_wait_for(format('(SELECT rolled_until FROM pgsentinel_archive_state) > %L',
                           (SELECT sample_time FROM pgsentinel_sample_archive
                             WHERE sample_id = :b)), '3 min');
BEGIN;
LOCK TABLE pgsentinel_archive_state IN SHARE ROW EXCLUSIVE MODE;
SELECT rolled_until AS r, hours_rolled_until AS h,
       hours_rolled_until >= date_trunc('hour', rolled_until, 'UTC') AS hours_end_at_minutes_hour
  FROM pgsentinel_archive_state \gset
SELECT :'hours_end_at_minutes_hour' AS hours_end_at_minutes_hour;
-- no minute at or after it is rolled up yet: each once, when it is whole
SELECT count(*) AS minutes_rolled_early FROM pgsentinel_rollup_minute
 WHERE bucket >= :'r';
SELECT count(*) AS observed_minutes_rolled_early FROM pgsentinel_rollup_minute_observed
 WHERE bucket >= :'r';
SELECT (SELECT count(*) FROM pgsentinel_rollup_hour WHERE bucket >= :'h')
     + (SELECT count(*) FROM pgsentinel_rollup_hour_observed WHERE bucket >= :'h')
     + (SELECT count(*) FROM pgsentinel_rollup_session_hour WHERE bucket >= :'h')
     + (SELECT count(*) FROM pgsentinel_rollup_blocking_hour WHERE bucket >= :'h')
       AS hours_rolled_early;
SELECT count(*) AS minutes_that_differ FROM (
    SELECT bucket, sum(db_time) AS db_time, sum(rows) AS rows
    FROM pgsentinel_rollup_minute GROUP BY bucket) r
FULL JOIN (
    SELECT date_trunc('minute', ash_time, 'UTC') AS bucket,
           sum(weight) AS db_time, count(*) AS rows
    FROM pgsentinel_ash_archive WHERE ash_time < :'r' GROUP BY 1) a USING (bucket)
WHERE r.db_time IS NULL OR a.db_time IS NULL
   OR abs(r.db_time - a.db_time) > 1e-9 OR r.rows <> a.rows;
SELECT count(*) AS hours_that_differ FROM (
    SELECT bucket, sum(db_time) AS db_time, sum(rows) AS rows
    FROM pgsentinel_rollup_hour GROUP BY bucket) r
FULL JOIN (
    SELECT date_trunc('hour', ash_time, 'UTC') AS bucket,
           sum(weight) AS db_time, count(*) AS rows
    FROM pgsentinel_ash_archive WHERE ash_time < :'h' GROUP BY 1) a USING (bucket)
WHERE r.db_time IS NULL OR a.db_time IS NULL
   OR abs(r.db_time - a.db_time) > 1e-9 OR r.rows <> a.rows;
SELECT count(*) AS observed_minutes_that_differ
FROM pgsentinel_rollup_minute_observed o
FULL JOIN (SELECT date_trunc('minute', sample_time, 'UTC') AS bucket,
                  count(*) AS samples, sum(weight) AS observed
           FROM pgsentinel_sample_archive WHERE sample_time < :'r' GROUP BY 1) s USING (bucket)
WHERE o.samples IS DISTINCT FROM s.samples
   OR abs(o.observed - s.observed) > 1e-9 OR o.observed IS NULL
   OR s.observed IS NULL;

-- the rollup views are the sums of the history's rows, as each role sees
-- them: by every column they keep, the hidden ones hidden alike; the peak
-- is the most rows of one sample
CREATE TEMP VIEW pgs_rollup_diff AS
WITH rm AS (
    SELECT bucket, datname, usesysid, usename, application_name, backend_type,
           wait_event_type, wait_event, queryid,
           round(sum(db_time)::numeric, 6) AS db_time, sum(rows) AS rows
    FROM pgsentinel_ash_minute GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
), am AS (
    SELECT date_trunc('minute', ash_time, 'UTC') AS bucket, datname, usesysid,
           usename, application_name, backend_type, wait_event_type,
           wait_event, queryid, round(sum(weight)::numeric, 6) AS db_time,
           count(*)::numeric AS rows
    FROM pgsentinel_ash_archive WHERE ash_time < :'r' GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
), rh AS (
    SELECT bucket, datname, usesysid, usename, application_name, backend_type,
           wait_event_type, wait_event, queryid,
           round(sum(db_time)::numeric, 6) AS db_time, sum(rows) AS rows
    FROM pgsentinel_ash_hour GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
), ah AS (
    SELECT date_trunc('hour', ash_time, 'UTC') AS bucket, datname, usesysid,
           usename, application_name, backend_type, wait_event_type,
           wait_event, queryid, round(sum(weight)::numeric, 6) AS db_time,
           count(*)::numeric AS rows
    FROM pgsentinel_ash_archive WHERE ash_time < :'h' GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
)
SELECT (SELECT count(*) FROM ((TABLE rm EXCEPT ALL TABLE am)
                              UNION ALL (TABLE am EXCEPT ALL TABLE rm)) d) AS minute_keys_that_differ,
       (SELECT count(*) FROM ((TABLE rh EXCEPT ALL TABLE ah)
                              UNION ALL (TABLE ah EXCEPT ALL TABLE rh)) d) AS hour_keys_that_differ,
       (SELECT count(*) FROM (
            (SELECT bucket, pid, datname, usesysid, usename, application_name,
                    client_addr, backend_type, wait_event_type, wait_event,
                    round(sum(db_time)::numeric, 6), sum(rows), max(last_time)
             FROM pgsentinel_ash_session_hour GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
             EXCEPT ALL
             SELECT date_trunc('hour', ash_time, 'UTC'), pid, datname, usesysid,
                    usename, application_name, client_addr, backend_type,
                    wait_event_type, wait_event, round(sum(weight)::numeric, 6),
                    count(*), max(ash_time)
             FROM pgsentinel_ash_archive WHERE ash_time < :'h' GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
            UNION ALL
            (SELECT date_trunc('hour', ash_time, 'UTC'), pid, datname, usesysid,
                    usename, application_name, client_addr, backend_type,
                    wait_event_type, wait_event, round(sum(weight)::numeric, 6),
                    count(*), max(ash_time)
             FROM pgsentinel_ash_archive WHERE ash_time < :'h' GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
             EXCEPT ALL
             SELECT bucket, pid, datname, usesysid, usename, application_name,
                    client_addr, backend_type, wait_event_type, wait_event,
                    round(sum(db_time)::numeric, 6), sum(rows), max(last_time)
             FROM pgsentinel_ash_session_hour GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)) d)
           AS session_keys_that_differ,
       (SELECT count(*) FROM (
            (SELECT bucket, pid, datname, usesysid, usename, application_name,
                    client_addr, backend_type, wait_event_type, wait_event,
                    round(sum(db_time)::numeric, 6), sum(rows), max(last_time)
             FROM pgsentinel_ash_session_minute GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
             EXCEPT ALL
             SELECT date_trunc('minute', ash_time, 'UTC'), pid, datname, usesysid,
                    usename, application_name, client_addr, backend_type,
                    wait_event_type, wait_event, round(sum(weight)::numeric, 6),
                    count(*), max(ash_time)
             FROM pgsentinel_ash_archive WHERE ash_time < :'r' GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
            UNION ALL
            (SELECT date_trunc('minute', ash_time, 'UTC'), pid, datname, usesysid,
                    usename, application_name, client_addr, backend_type,
                    wait_event_type, wait_event, round(sum(weight)::numeric, 6),
                    count(*), max(ash_time)
             FROM pgsentinel_ash_archive WHERE ash_time < :'r' GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
             EXCEPT ALL
             SELECT bucket, pid, datname, usesysid, usename, application_name,
                    client_addr, backend_type, wait_event_type, wait_event,
                    round(sum(db_time)::numeric, 6), sum(rows), max(last_time)
             FROM pgsentinel_ash_session_minute GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)) d)
           AS session_minute_keys_that_differ,
       (SELECT count(*) FROM pgsentinel_sample_minute o
        FULL JOIN (SELECT date_trunc('minute', sample_time, 'UTC') AS bucket,
                          max(active_sessions) AS peak
                   FROM pgsentinel_sample_archive WHERE sample_time < :'r' GROUP BY 1) s USING (bucket)
        WHERE o.peak IS DISTINCT FROM s.peak) AS peaks_that_differ,
       (SELECT count(*) FROM pgsentinel_ash_minute
        WHERE wait_event_type IS NOT NULL) > 0 AS waits_shown,
       (SELECT count(*) FROM pgsentinel_ash_minute
        WHERE wait_event_type IS NULL) > 0 AS waits_hidden;
SELECT * FROM pgs_rollup_diff;
CREATE ROLE regress_pgs_rollup_reader;
GRANT SELECT ON pgs_rollup_diff TO regress_pgs_rollup_reader;
SET ROLE regress_pgs_rollup_reader;
SELECT * FROM pgs_rollup_diff;
COMMIT;
-- the tables themselves stay closed
SELECT count(*) FROM pgsentinel_rollup_minute;
SELECT count(*) FROM pgsentinel_rollup_minute_batch;
RESET ROLE;
DROP VIEW pgs_rollup_diff;
DROP ROLE regress_pgs_rollup_reader;
-- an archive restored from a dump has no rolled_until (the watermark is
-- not dumped): its rollups are read up to the end of their last minute
BEGIN;
UPDATE pgsentinel_archive_state SET rolled_until = NULL;
SELECT x.rollup_until = (SELECT max(bucket) + interval '1 minute'
                           FROM pgsentinel_rollup_minute_observed)
       AS rollups_read_to_their_last_minute
FROM pgsentinel_history_split x;
ROLLBACK;

-- one archiving step, run by hand as the archiver runs it
CREATE FUNCTION pg_temp.pgs_step() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    s name := (SELECT n.nspname FROM pg_extension e
               JOIN pg_namespace n ON n.oid = e.extnamespace
               WHERE e.extname = 'pgsentinel');
    q text;
BEGIN
    EXECUTE format('SELECT %I.pgsentinel_archive_step_sql()', s) INTO q;
    PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
    EXECUTE format(q, s) USING 1, 100, '-infinity'::timestamptz, 9223372036854775807::int8;
    PERFORM set_config('search_path', s || ', public', true);
END $$;

-- an hour is rolled up once it has ended, from its minutes, by the step
-- that rolls up past its end: here a step run by hand (in a transaction
-- rolled back; the archiver waits for the state's table lock, which it
-- takes before the row's) on minutes of
-- 2030-01-01 10:00 and 11:00, the minutes rolled up to 11:05 and the hours
-- to 10:00.  It closes 10:00 alone, and a second step closes nothing.
BEGIN;
LOCK TABLE pgsentinel_archive_state IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE pgs_t_m PARTITION OF pgsentinel_rollup_minute_batch
    FOR VALUES FROM ('2030-01-01 00:00+00') TO ('2030-01-02 00:00+00');
CREATE TABLE pgs_t_mo PARTITION OF pgsentinel_rollup_minute_observed
    FOR VALUES FROM ('2030-01-01 00:00+00') TO ('2030-01-02 00:00+00');
CREATE TABLE pgs_t_ms PARTITION OF pgsentinel_rollup_session_minute_batch
    FOR VALUES FROM ('2030-01-01 00:00+00') TO ('2030-01-02 00:00+00');
CREATE TABLE pgs_t_mb PARTITION OF pgsentinel_rollup_blocking_minute_batch
    FOR VALUES FROM ('2030-01-01 00:00+00') TO ('2030-01-02 00:00+00');
CREATE TABLE pgs_t_h PARTITION OF pgsentinel_rollup_hour
    FOR VALUES FROM ('2030-01-01 00:00+00') TO ('2030-02-01 00:00+00');
CREATE TABLE pgs_t_ho PARTITION OF pgsentinel_rollup_hour_observed
    FOR VALUES FROM ('2030-01-01 00:00+00') TO ('2030-02-01 00:00+00');
CREATE TABLE pgs_t_hs PARTITION OF pgsentinel_rollup_session_hour
    FOR VALUES FROM ('2030-01-01 00:00+00') TO ('2030-02-01 00:00+00');
CREATE TABLE pgs_t_hb PARTITION OF pgsentinel_rollup_blocking_hour
    FOR VALUES FROM ('2030-01-01 00:00+00') TO ('2030-02-01 00:00+00');
-- (a minute's rows as batches: 10:06 has two, as when rows came late)
INSERT INTO pgsentinel_rollup_minute_batch
SELECT v.bucket::timestamptz, pgsentinel_minute_pack(v.datname::text[], v.usesysid::oid[], v.usename::text[], v.application_name::text[], v.backend_type::text[], v.wait_event_type::text[], v.wait_event::text[], v.queryid::int8[], v.db_time::float8[], v.rows::int8[])
  FROM (VALUES
  ('2030-01-01 10:05+00', '{db}', '{10}', '{u}', '{app}', '{client backend}', '{Lock}', '{tuple}', '{42}', '{1.5}', '{3}'),
  ('2030-01-01 10:06+00', '{db}', '{10}', '{u}', '{app}', '{client backend}', '{Lock}', '{tuple}', '{42}', '{2.0}', '{4}'),
  ('2030-01-01 10:06+00', '{db}', '{10}', '{u}', '{app}', '{client backend}', '{Lock}', '{tuple}', '{42}', '{0.25}', '{1}'),
  ('2030-01-01 10:59+00', '{db}', '{10}', '{u}', '{app}', '{client backend}', '{IO}', '{DataFileRead}', '{42}', '{0.5}', '{1}'),
  ('2030-01-01 11:02+00', '{db}', '{10}', '{u}', '{app}', '{client backend}', '{Lock}', '{tuple}', '{42}', '{9.0}', '{9}')) v(bucket, datname, usesysid, usename, application_name, backend_type, wait_event_type, wait_event, queryid, db_time, rows);
INSERT INTO pgsentinel_rollup_minute_observed VALUES
  ('2030-01-01 10:05+00', 60, 60.0, 3), ('2030-01-01 10:06+00', 60, 59.5, 5),
  ('2030-01-01 11:02+00', 60, 60.0, 9);
INSERT INTO pgsentinel_rollup_session_minute_batch
SELECT v.bucket::timestamptz, pgsentinel_session_minute_pack(v.pid::int4[], v.datname::text[], v.usesysid::oid[], v.usename::text[], v.application_name::text[], v.client_addr::text[], v.backend_type::text[], v.wait_event_type::text[], v.wait_event::text[], v.db_time::float8[], v.rows::int8[], v.last_time::timestamptz[])
  FROM (VALUES
  ('2030-01-01 10:05+00', '{100}', '{db}', '{10}', '{u}', '{app}', '{10.0.0.1}', '{client backend}', '{Lock}', '{tuple}', '{1.5}', '{3}', '{"2030-01-01 10:05:58+00"}'),
  ('2030-01-01 10:06+00', '{100}', '{db}', '{10}', '{u}', '{app}', '{10.0.0.1}', '{client backend}', '{Lock}', '{tuple}', '{2.0}', '{4}', '{"2030-01-01 10:06:30+00"}'),
  ('2030-01-01 11:02+00', '{100}', '{db}', '{10}', '{u}', '{app}', '{10.0.0.1}', '{client backend}', '{Lock}', '{tuple}', '{9.0}', '{9}', '{"2030-01-01 11:02:30+00"}')) v(bucket, pid, datname, usesysid, usename, application_name, client_addr, backend_type, wait_event_type, wait_event, db_time, rows, last_time);
INSERT INTO pgsentinel_rollup_blocking_minute_batch
SELECT v.bucket::timestamptz, pgsentinel_blocking_minute_pack(
       array_agg(v.kind::"char"), array_agg(v.root_pid),
       array_agg(v.pid), array_agg(v.key_usesysid::oid), array_agg(v.depth),
       array_agg(v.blocked_by::int4[]::text), array_agg(v.samples::int8),
       array_agg(v.db_time), array_agg(v.last_time::timestamptz),
       array_agg(v.usesysid::oid), array_agg(v.usename), array_agg(v.state),
       array_agg(v.wait_event_type), array_agg(v.wait_event), array_agg(v.query),
       array_agg(v.first_time::timestamptz),
       array_agg(v.application_name), array_agg(v.client_addr),
       array_agg(v.xact_start::timestamptz), array_agg(NULL::text),
       array_agg(NULL::text), array_agg(NULL::text))
  FROM (VALUES
  ('2030-01-01 10:05+00', 'b', 7, 100, NULL, 1, '{7}', 3, 1.5, '2030-01-01 10:05:58+00',
   10, 'u', 'active', 'Lock', 'tuple', 'UPDATE t SET v = 1', '2030-01-01 10:05:01+00',
   'app', '10.0.0.1', '2030-01-01 10:05:00+00'),
  ('2030-01-01 10:06+00', 'b', 7, 100, NULL, 2, '{7,8}', 4, 2.0, '2030-01-01 10:06:30+00',
   10, 'u', 'active', 'Lock', 'transactionid', 'UPDATE t SET v = 2', '2030-01-01 10:06:01+00',
   'app2', '10.0.0.2', '2030-01-01 10:06:00+00'),
  ('2030-01-01 10:06+00', 'r', 7, NULL, NULL, NULL, NULL, 4, 0, '2030-01-01 10:06:30+00',
   NULL, NULL, NULL, NULL, NULL, NULL, '2030-01-01 10:06:01+00', NULL, NULL, NULL),
  ('2030-01-01 11:02+00', 'b', 7, 100, NULL, 1, '{9}', 9, 9.0, '2030-01-01 11:02:30+00',
   10, 'u', 'active', 'Lock', 'tuple', 'UPDATE t SET v = 3', '2030-01-01 11:02:01+00',
   'app', '10.0.0.1', '2030-01-01 11:02:00+00'))
    v(bucket, kind, root_pid, pid, key_usesysid, depth, blocked_by, samples, db_time,
      last_time, usesysid, usename, state, wait_event_type, wait_event, query, first_time,
      application_name, client_addr, xact_start)
 GROUP BY v.bucket;
UPDATE pgsentinel_archive_state
   SET rolled_until = '2030-01-01 11:05+00', hours_rolled_until = '2030-01-01 10:00+00';
SELECT pg_temp.pgs_step();
SELECT hours_rolled_until FROM pgsentinel_archive_state;
SELECT bucket, wait_event_type, wait_event, db_time, rows FROM pgsentinel_rollup_hour
 WHERE bucket >= '2030-01-01' ORDER BY 1, 2;
SELECT bucket, samples, observed, peak FROM pgsentinel_rollup_hour_observed
 WHERE bucket >= '2030-01-01' ORDER BY 1;
SELECT bucket, pid, db_time, rows, last_time FROM pgsentinel_rollup_session_hour
 WHERE bucket >= '2030-01-01' ORDER BY 1;
SELECT bucket, kind, root_pid, pid, depth, blocked_by, samples, db_time, last_time,
       usename, wait_event, query, first_time, application_name, client_addr, xact_start
  FROM pgsentinel_rollup_blocking_hour WHERE bucket >= '2030-01-01' ORDER BY 1, 2;
SELECT pg_temp.pgs_step();
SELECT hours_rolled_until,
       (SELECT sum(db_time) FROM pgsentinel_rollup_hour WHERE bucket >= '2030-01-01') AS hour_db_time_again
  FROM pgsentinel_archive_state;
ROLLBACK;

-- an archive restored from a dump has no watermarks: where its last minute
-- rolled up is in an hour the hour rollups already hold, that hour is not
-- rolled up again (here the minutes of 2020-01-01 10:05 and 10:06, their
-- hour closed, and no later minute)
BEGIN;
LOCK TABLE pgsentinel_archive_state IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE pgs_t_m PARTITION OF pgsentinel_rollup_minute_batch
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE pgs_t_mo PARTITION OF pgsentinel_rollup_minute_observed
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE pgs_t_h PARTITION OF pgsentinel_rollup_hour
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-02-01 00:00+00');
CREATE TABLE pgs_t_ho PARTITION OF pgsentinel_rollup_hour_observed
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-02-01 00:00+00');
DELETE FROM pgsentinel_rollup_minute_observed;
INSERT INTO pgsentinel_rollup_minute_batch
SELECT v.bucket::timestamptz, pgsentinel_minute_pack(v.datname::text[], v.usesysid::oid[], v.usename::text[], v.application_name::text[], v.backend_type::text[], v.wait_event_type::text[], v.wait_event::text[], v.queryid::int8[], v.db_time::float8[], v.rows::int8[])
  FROM (VALUES
  ('2020-01-01 10:05+00', '{db}', '{10}', '{u}', '{app}', '{client backend}', '{Lock}', '{tuple}', '{42}', '{1.5}', '{3}'),
  ('2020-01-01 10:06+00', '{db}', '{10}', '{u}', '{app}', '{client backend}', '{Lock}', '{tuple}', '{42}', '{2.0}', '{4}')) v(bucket, datname, usesysid, usename, application_name, backend_type, wait_event_type, wait_event, queryid, db_time, rows);
INSERT INTO pgsentinel_rollup_minute_observed VALUES
  ('2020-01-01 10:05+00', 60, 60.0, 3), ('2020-01-01 10:06+00', 60, 59.5, 5);
INSERT INTO pgsentinel_rollup_hour VALUES
  ('2020-01-01 10:00+00', 'db', 10, 'u', 'app', 'client backend', 'Lock', 'tuple', 42, 3.5, 7);
INSERT INTO pgsentinel_rollup_hour_observed VALUES ('2020-01-01 10:00+00', 120, 119.5, 5);
UPDATE pgsentinel_archive_state SET rolled_until = NULL, hours_rolled_until = NULL;
SELECT pg_temp.pgs_step();
SELECT h.db_time, h.rows, o.samples, o.observed
  FROM pgsentinel_rollup_hour h, pgsentinel_rollup_hour_observed o
 WHERE h.bucket = '2020-01-01 10:00+00' AND o.bucket = h.bucket;
ROLLBACK;

-- 2. keep_one_in = 10: one sample in ten, each row weighing ten periods;
-- over whole groups of ten samples in which this session was active all
-- along, its time is the same in the archive as in the ring.
ALTER SYSTEM SET pgsentinel_archive.keep_one_in = 10;
SELECT pg_reload_conf();
SELECT max(sample_id) AS b FROM pgsentinel_samples() \gset
SELECT pgs_wait_for(format('EXISTS (SELECT FROM pgsentinel_sample_archive
                                    WHERE sample_id > %s AND weight > 5 * sample_period)', :b));
SELECT pgs_stay_active(60);
SELECT a, b FROM pgs_active_window('SELECT pgs_stay_active(60);', 10) \gset
SELECT pgs_wait_archived(:b);
SELECT :b - :a + 1 >= 20 AS two_groups_or_more,
       count(*) = :b - :a + 1 AS seen_at_every_sample
FROM pg_active_session_history
WHERE pid = pg_backend_pid() AND sample_id BETWEEN :a AND :b;
SELECT count(*) = (:b - :a + 1) / 10 AS one_sample_in_ten,
       bool_and(sample_id % 10 = 0) AS kept_by_sample_id,
       bool_and(abs(weight - 10 * sample_period) < 1e-9) AS weight_is_ten_periods
FROM pgsentinel_sample_archive WHERE sample_id BETWEEN :a AND :b;
SELECT round((SELECT sum(sample_period) FROM pg_active_session_history
              WHERE pid = pg_backend_pid() AND sample_id BETWEEN :a AND :b)::numeric, 6)
     = round((SELECT sum(weight) FROM pgsentinel_ash_archive
              WHERE pid = pg_backend_pid() AND sample_id BETWEEN :a AND :b)::numeric, 6)
       AS same_time_in_archive_and_ring;

-- 3. keep_one_in = 1 again, across a change of sampling period: each row
-- weighs the period of its own sample.
ALTER SYSTEM SET pgsentinel_archive.keep_one_in = 1;
SELECT pg_reload_conf();
SELECT max(sample_id) AS b FROM pgsentinel_samples() \gset
SELECT pgs_wait_for(format('EXISTS (SELECT FROM pgsentinel_sample_archive
                                    WHERE sample_id > %s AND sample_id %% 10 <> 0)', :b));
SELECT max(sample_id) AS a FROM pgsentinel_samples() \gset
SELECT pgs_stay_active(10);
ALTER SYSTEM SET pgsentinel_ash.sampling_period = 0.02;
SELECT pg_reload_conf();
SELECT pgs_wait_for('(SELECT sampling_period FROM pgsentinel_status()) = 0.02');
SELECT pgs_stay_active(10);
SELECT max(sample_id) AS b FROM pgsentinel_samples() \gset
SELECT pgs_wait_archived(:b);
SELECT count(DISTINCT sample_period) AS periods
FROM pg_active_session_history
WHERE pid = pg_backend_pid() AND sample_id BETWEEN :a AND :b;
SELECT round((SELECT sum(sample_period) FROM pg_active_session_history
              WHERE pid = pg_backend_pid() AND sample_id BETWEEN :a AND :b)::numeric, 6)
     = round((SELECT sum(weight) FROM pgsentinel_ash_archive
              WHERE pid = pg_backend_pid() AND sample_id BETWEEN :a AND :b)::numeric, 6)
       AS same_time_in_archive_and_ring;
ALTER SYSTEM RESET pgsentinel_ash.sampling_period;
SELECT pg_reload_conf();
SELECT pgs_wait_for('(SELECT sampling_period FROM pgsentinel_status()) = 0.01');

-- 4. pgsentinel 1.4's columns, read from the archive and from the history.
SELECT ash_time, datid, datname, pid, usesysid, usename, application_name,
       client_addr, client_hostname, client_port, backend_start, xact_start,
       query_start, state_change, wait_event_type, wait_event, state,
       backend_xid, backend_xmin, top_level_query, query, cmdtype, queryid,
       backend_type, blockers, blockerpid, blocker_state
FROM pgsentinel_ash_archive LIMIT 0;
SELECT ash_time, datid, datname, pid, usesysid, usename, application_name,
       client_addr, client_hostname, client_port, backend_start, xact_start,
       query_start, state_change, wait_event_type, wait_event, state,
       backend_xid, backend_xmin, top_level_query, query, cmdtype, queryid,
       backend_type, blockers, blockerpid, blocker_state
FROM pgsentinel_ash_history LIMIT 0;

-- 5. Bad settings are refused with their range; nothing changes.
ALTER SYSTEM SET pgsentinel_archive.keep_one_in = 0;
ALTER SYSTEM SET pgsentinel_archive.keep_one_in = 3601;
SELECT name, setting FROM pg_settings WHERE name LIKE 'pgsentinel_archive.%' ORDER BY 1;

-- 6. The archive is not readable directly but through the views.
CREATE ROLE regress_pgs_archive_reader;
SET ROLE regress_pgs_archive_reader;
SELECT count(*) FROM pgsentinel_archive_batch;
SELECT count(*) > 0 AS history_readable FROM pgsentinel_sample_history;
RESET ROLE;
DROP ROLE regress_pgs_archive_reader;

-- A statement run with other values is archived as its template once a
-- day and its values in each activity; read back whole.
SELECT pgs_stay_active(3);
SELECT pgs_stay_active(4);
SELECT max(sample_id) AS b FROM pgsentinel_samples() \gset
SELECT pgs_wait_archived(:b);
-- and a statement seen by the samples of several steps (several batches)
-- reads back the same from each
SELECT pg_sleep(0.5);
SELECT max(sample_id) AS b FROM pgsentinel_samples() \gset
SELECT pgs_wait_archived(:b);
-- (as the ring has them: a sample taken as the statement began may not
-- have its snapshot or query id yet)
SELECT count(*) >= 20 AS in_its_samples,
       count(DISTINCT (xact_start, query_start, state_change, state,
                       backend_xid::text, backend_xmin::text, query, cmdtype,
                       queryid, nested_queryid))
       = (SELECT count(DISTINCT (xact_start, query_start, state_change, state,
                                 backend_xid::text, backend_xmin::text, query, cmdtype,
                                 queryid, nested_queryid))
            FROM ring_rows WHERE pid = pg_backend_pid()
             AND top_level_query = 'SELECT pg_sleep(0.5);') AS same_in_each
  FROM pgsentinel_ash_archive
 WHERE pid = pg_backend_pid() AND top_level_query = 'SELECT pg_sleep(0.5);'
   AND ash_time >= date_trunc('day', now(), 'UTC');
-- every column as the ring has it (a top-level statement's rows: their
-- text stored once, for both columns)
CREATE TEMP VIEW sleep_rows AS
  SELECT sample_id FROM ring_rows
   WHERE pid = pg_backend_pid() AND top_level_query = 'SELECT pg_sleep(0.5);';
SELECT (SELECT count(*) > 0 AND bool_and(query = top_level_query) FROM ring_rows
         WHERE sample_id IN (SELECT sample_id FROM sleep_rows)
           AND pid = pg_backend_pid()) AS top_level_rows,
       count(*) AS top_level_rows_that_differ FROM (
    (SELECT * FROM ring_rows WHERE sample_id IN (SELECT sample_id FROM sleep_rows)
                               AND pid = pg_backend_pid()
     EXCEPT ALL SELECT * FROM archive_rows WHERE sample_id IN (SELECT sample_id FROM sleep_rows)
                                             AND pid = pg_backend_pid())
    UNION ALL
    (SELECT * FROM archive_rows WHERE sample_id IN (SELECT sample_id FROM sleep_rows)
                                  AND pid = pg_backend_pid()
     EXCEPT ALL SELECT * FROM ring_rows WHERE sample_id IN (SELECT sample_id FROM sleep_rows)
                                          AND pid = pg_backend_pid())) d;
SELECT array_agg(DISTINCT top_level_query ORDER BY top_level_query) AS texts_read_back,
       (SELECT count(*) FROM pgsentinel_archive_text t
         WHERE t.text = E'SELECT pgs_stay_active(\x01);'
           AND t.day = timezone('UTC', now())::date) AS templates_stored
  FROM pgsentinel_ash_archive
 WHERE pid = pg_backend_pid()
   AND top_level_query IN ('SELECT pgs_stay_active(3);', 'SELECT pgs_stay_active(4);');

DROP FUNCTION pgs_wait_archived(bigint), pgs_stay_active(int),
    pgs_active_window(text, int);

-- 7. A name squatted by another role is never taken for our partition.
-- Tomorrow's raw partition is dropped and a role allowed to create in the
-- schema makes a view of its name; the archiver (restarted: it makes the
-- partitions it lacks at start) says what is in the way and archives
-- again once it is gone (docs/security.md).
SELECT 'pgsentinel_archive_batch_' ||
       to_char(timezone('UTC', now())::date + 1, 'YYYYMMDD') AS tomorrow \gset
DROP TABLE :"tomorrow";
CREATE ROLE regress_pgs_squatter;
GRANT CREATE ON SCHEMA public TO regress_pgs_squatter;
SET ROLE regress_pgs_squatter;
CREATE VIEW :"tomorrow" AS SELECT 1 AS x;
RESET ROLE;
SELECT pg_terminate_backend(archive_worker_pid) AS restarted FROM pgsentinel_status();
SELECT pgs_wait_for($$(SELECT archive_state FROM pgsentinel_status()) = 'failing'$$);
SELECT regexp_replace(archive_message, '[0-9]{8}', 'YYYYMMDD') AS message
  FROM pgsentinel_status();
SELECT c.relkind FROM pg_class c WHERE c.relname = :'tomorrow';
DROP VIEW :"tomorrow";
SELECT pgs_wait_for($$(SELECT archive_state FROM pgsentinel_status()) = 'ok'$$);
SELECT c.relkind, c.relispartition FROM pg_class c WHERE c.relname = :'tomorrow';
REVOKE CREATE ON SCHEMA public FROM regress_pgs_squatter;
DROP ROLE regress_pgs_squatter;

-- 8. A partition the archiver makes keeps none of the schema's default
-- privileges: other roles read the archive through its parents' views,
-- which show them only what pg_stat_activity would.
CREATE ROLE regress_pgs_defacl;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO regress_pgs_defacl;
SELECT 'pgsentinel_archive_text_' ||
       to_char(timezone('UTC', now())::date + 1, 'YYYYMMDD') AS tomorrow_text \gset
DROP TABLE :"tomorrow_text";
SELECT pg_terminate_backend(archive_worker_pid) AS restarted FROM pgsentinel_status();
SELECT pgs_wait_for(format('EXISTS (SELECT FROM pg_class WHERE relname = %L AND relispartition)',
                           :'tomorrow_text'));
SELECT has_table_privilege('regress_pgs_defacl', :'tomorrow_text', 'SELECT')
       AS default_privilege_kept;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT ON TABLES FROM regress_pgs_defacl;
DROP OWNED BY regress_pgs_defacl;
DROP ROLE regress_pgs_defacl;

-- 9. Of another role's time, the rollup views show one row a bucket under
-- what pg_stat_activity shows (database, role, application; a session's
-- pid): neither its waits and statements nor how its time splits.
CREATE ROLE regress_pgs_bob;
CREATE ROLE regress_pgs_alice;
SELECT date_trunc('minute', now()) AS bucket, 'regress_pgs_bob'::regrole::oid AS bob \gset
INSERT INTO pgsentinel_rollup_minute_batch
SELECT :'bucket', pgsentinel_minute_pack(array_agg('postgres'::text), array_agg(:bob::oid),
       array_agg('regress_pgs_bob'::text), array_agg('app'::text),
       array_agg('client backend'::text), array_agg(t), array_agg(e),
       array_agg(q::int8), array_agg(1.5::float8), array_agg(3::int8))
  FROM (VALUES ('IO', 'DataFileRead', 11), ('Lock', 'tuple', 12), ('LWLock', 'WALWrite', 13),
               (NULL, NULL, 14)) v(t, e, q);
INSERT INTO pgsentinel_rollup_session_minute_batch
SELECT :'bucket', pgsentinel_session_minute_pack(array_agg(4242), array_agg('postgres'::text), array_agg(:bob::oid),
       array_agg('regress_pgs_bob'::text), array_agg('app'::text),
       array_agg('192.0.2.1'::text), array_agg('client backend'::text), array_agg(t),
       array_agg(e), array_agg(2.0::float8),
       array_agg(4::int8), array_agg(now()))
  FROM (VALUES ('IO', 'DataFileRead'), ('Lock', 'tuple'), (NULL, NULL)) v(t, e);
SET ROLE regress_pgs_alice;
SELECT count(*) AS rows, sum(db_time) AS db_time, sum(rows) AS samples_rows,
       count(wait_event) AS waits_shown, count(queryid) AS statements_shown
  FROM pgsentinel_ash_minute WHERE usename = 'regress_pgs_bob';
SELECT count(*) AS rows, sum(db_time) AS db_time, count(wait_event) AS waits_shown,
       count(client_addr) AS clients_shown
  FROM pgsentinel_ash_session_minute WHERE usename = 'regress_pgs_bob';
RESET ROLE;
SELECT count(*) AS rows_for_a_superuser FROM pgsentinel_ash_minute WHERE usename = 'regress_pgs_bob';
DELETE FROM pgsentinel_rollup_minute_batch b
WHERE :bob IN (SELECT u.usesysid FROM pgsentinel_rollup_minute_rows(b.row_data) u);
DELETE FROM pgsentinel_rollup_session_minute_batch b
WHERE :bob IN (SELECT u.usesysid FROM pgsentinel_rollup_session_minute_rows(b.row_data) u);
DROP ROLE regress_pgs_bob, regress_pgs_alice;

-- 10. The archive's statements are the extension's: the texts' ids, one per
-- text and day, found again by hash; and the partitions listed to make and
-- to drop.  The state's lock keeps the archiver's step out meanwhile.
BEGIN;
LOCK TABLE pgsentinel_archive_state IN SHARE ROW EXCLUSIVE MODE;
SELECT timezone('UTC', now())::date AS today,
       coalesce(max(text_id), 0) AS max_id
  FROM pgsentinel_archive_text WHERE day = timezone('UTC', now())::date \gset
CREATE TEMP TABLE first_ids AS
SELECT text, text_id - :max_id AS id
  FROM pgsentinel_text_ids(ARRAY[:'today', :'today', :'today', :'today']::date[],
                           ARRAY['regress text a', 'regress text b',
                                 'regress text a', NULL]);
SELECT * FROM first_ids ORDER BY id;
SELECT t.text, t.text_id - :max_id AS id, f.id = t.text_id - :max_id AS same_id
  FROM pgsentinel_text_ids(ARRAY[:'today', :'today']::date[],
                           ARRAY['regress text b', 'regress text c']) t
  LEFT JOIN first_ids f USING (text) ORDER BY 2;
SELECT count(*) AS stored_once FROM pgsentinel_archive_text
 WHERE day = :'today' AND text LIKE 'regress text _';
ROLLBACK;
-- A text as a template and its literal values, and back: exact whatever
-- the text (quotes, escapes, dollar quotes, comments, parameters, names with
-- digits, multibyte characters; a text holding the mark is kept whole).
CREATE TEMP TABLE split_texts (n int, t text);
INSERT INTO split_texts VALUES
  (1, 'SELECT pgs_stay_active(20)'),
  (2, $$UPDATE t1 SET v = v + -12.5e3, s = 'it''s' WHERE id IN (7, .5) AND x2 = $1$$),
  (3, $$SELECT E'a\'b', B'101', X'ff', N'n', U&'d\0061t', "col""1" FROM "t 3"$$),
  (4, $q$DO $body$ BEGIN PERFORM 1; END $body$ -- 42 stays$q$),
  (5, 'SELECT 1 /* 2 */, ''€uro'', größe_1 FROM tab'),
  (6, 'no literal here'),
  (7, E'SELECT 5, \'\x01\''),
  (8, ''),
  (9, $$SELECT 'unterminated$$),
  (10, 'SELECT $tag$ never closed');
SELECT n, replace(p[1], E'\x01', '?') AS template,
       replace(p[2], E'\x01', ' | ') AS text_values,
       pgsentinel_text_fill(p[1], p[2]) = t AS exact
  FROM split_texts, LATERAL (SELECT pgsentinel_text_split(t) AS p) x
 ORDER BY n;
SELECT pgsentinel_text_fill(NULL, 'x') IS NULL AS null_template,
       pgsentinel_text_fill('abc', NULL) = 'abc' AS null_values;
SELECT pgsentinel_text_fill(E'a\x01b\x01', 'one');
SELECT pgsentinel_text_fill(E'a\x01b', E'one\x01two');
-- Every partitioned table of days gets one from the day asked for, each
-- made apart and attached; of today's none is missing.
SELECT p.retention, count(DISTINCT p.parent) AS tables,
       count(DISTINCT m.partition_name) >= count(DISTINCT p.parent) AS listed,
       count(*) FILTER (WHERE m.ddl LIKE 'CREATE TABLE %')
         = count(DISTINCT m.partition_name) AS each_created,
       count(*) FILTER (WHERE m.ddl LIKE 'ALTER TABLE % ATTACH PARTITION %')
         = count(DISTINCT m.partition_name) AS each_attached
  FROM pgsentinel_archive_partitioned() p
  JOIN pgsentinel_archive_partitions_to_make(timezone('UTC', now())::date - 2,
                                             'public'::regnamespace) m
    ON m.partition_name LIKE p.parent || '\_%'
   AND m.partition_name NOT LIKE p.parent || '\_%\_%'
 WHERE p.retention <> 'hour'
 GROUP BY 1 ORDER BY 1;
SELECT count(*) AS needed_missing
  FROM pgsentinel_archive_partitions_to_make(timezone('UTC', now())::date,
                                             'public'::regnamespace)
 WHERE needed;
-- Today's raw partitions are listed to drop when the raw retention ends
-- tomorrow, and only they: not the minute rollups', kept one day more.
SELECT string_agg(p.relname, ', ' ORDER BY p.relname) AS todays_to_drop
  FROM pgsentinel_archive_partitions_expired(timezone('UTC', now())::date + 1,
                                             timezone('UTC', now())::date,
                                             timezone('UTC', now())::date - 400,
                                             'public'::regnamespace) x
  JOIN pg_class p ON p.oid = x.parent
 WHERE x.ddl LIKE '%\_' || to_char(timezone('UTC', now()), 'YYYYMMDD');

-- The batches' integer row arrays are packed (src/archive/packed_ints.c):
-- every value reads back exactly, the NULLs where they were; an element
-- like the one before takes a byte.
SELECT pgsentinel_unpack(pgsentinel_pack(
         '{-9223372036854775808,9223372036854775807,0,NULL,-1,1,NULL,42}'::int8[])) AS int8_back,
       pgsentinel_unpack(pgsentinel_pack('{2147483647,-2147483648,NULL}'::int4[])) AS int4_back,
       pgsentinel_unpack(pgsentinel_pack('{4294967295,0,3}'::xid[])) AS xid_back,
       pgsentinel_unpack(pgsentinel_pack('{NULL,NULL}'::int8[])) AS nulls_back,
       pgsentinel_unpack(pgsentinel_pack('{}'::int8[])) AS empty_back,
       pgsentinel_pack('{}'::int8[]) AS empty_packed,
       pgsentinel_pack('{1,2,3,3,2}'::int4[]) AS small_packed;
-- Values that jump back and forth are written as they are (format byte 3,
-- or 4 with NULLs) where that is shorter than their differences; they read
-- back the same.
SELECT get_byte(p, 0) AS format, octet_length(p) AS bytes, pgsentinel_unpack(p) AS back
  FROM (VALUES (pgsentinel_pack('{100,-50,90,-60,80}'::int8[])),
               (pgsentinel_pack('{100,NULL,-50,90,-60,80}'::int8[])),
               (pgsentinel_pack('{100,101,102,103,104}'::int8[]))) v(p);
SELECT octet_length(pgsentinel_pack(array_agg(i::int8 * 1000000))) AS seconds_apart,
       octet_length(pgsentinel_pack(array_agg(7))) AS the_same,
       octet_length(pgsentinel_pack(array_agg(CASE WHEN i % 2 = 0 THEN i END))) AS half_null
  FROM generate_series(1, 1000) i;
-- What pgsentinel_pack() did not write is an error, never a read past the
-- end; a multidimensional array is refused.
SELECT pgsentinel_unpack('\x');
SELECT pgsentinel_unpack('\x07');
SELECT pgsentinel_unpack('\x00');
SELECT pgsentinel_unpack('\x0380');
SELECT pgsentinel_unpack('\x0180');
SELECT pgsentinel_unpack('\x01ffffffffffffffffff7f');
SELECT pgsentinel_unpack('\x027f');
SELECT pgsentinel_unpack('\x0201010000');
SELECT pgsentinel_pack('{{1,2},{3,4}}'::int8[]);
-- Few distinct values that jump about are written as a dictionary
-- (format byte 5, or 6 with NULLs: the distinct values ascending, then
-- each element's index among them) where that is shortest; they read back
-- the same.
SELECT n, get_byte(p, 0) AS format,
       pgsentinel_unpack(p) IS NOT DISTINCT FROM a::int8[] AS same
  FROM (SELECT n, a, pgsentinel_pack(a) AS p
          FROM (SELECT n, array_agg((ARRAY[5, 9000000000, -3, 77, NULL,
                                           -9223372036854775808, 9223372036854775807])
                                    [1 + (hashint4(i) & 2147483647) % n]) AS a
                  FROM generate_series(1, 600) i, (VALUES (4), (5), (7)) v(n)
                 GROUP BY n) x) y
 ORDER BY 1;
-- Not for fewer than 8 values, nor where most are distinct.
SELECT get_byte(pgsentinel_pack('{5,77,5,77,5,77,5}'::int8[]), 0) AS seven,
       get_byte(pgsentinel_pack(array_agg(((hashint4(i) & 2147483647) % 1000)::int8)), 0) AS distinct_most
  FROM generate_series(1, 600) i;
-- A dictionary read back; one with no value, values not ascending (or
-- past the largest bigint), an index past its values, a count its bytes
-- cannot hold, or an index too many is refused.
SELECT pgsentinel_unpack('\x0502140500010100') AS plain,
       pgsentinel_unpack('\x06030501010000') AS with_nulls;
SELECT pgsentinel_unpack('\x0500');
SELECT pgsentinel_unpack('\x050214000001');
SELECT pgsentinel_unpack('\x0502feffffffffffffffff010100');
SELECT pgsentinel_unpack('\x0502140502');
SELECT pgsentinel_unpack('\x05ff7f01');
SELECT pgsentinel_unpack('\x0603050101000000');
-- A double precision column of whole numbers is stored as packed integers
-- (kind 6), a fraction of the bytes of doubles; every value reads back
-- exactly, and what is not a whole number a double holds exactly (-0,
-- 2^53 + 2, NaN, infinities, fractions) keeps the column in doubles.
SELECT octet_length(w) * 4 < octet_length(f) AS whole_shorter
  FROM (SELECT pgsentinel_minute_pack(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                      array_agg((i * 37 % 101)::float8), NULL) AS w,
               pgsentinel_minute_pack(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                      array_agg((i * 37 % 101)::float8 + 0.5), NULL) AS f
          FROM generate_series(1, 1000) i) x;
SELECT v.a AS given, (SELECT array_agg(r.db_time) FROM pgsentinel_rollup_minute_rows(
           pgsentinel_minute_pack(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, v.a, NULL)) r)
           AS back
  FROM (VALUES ('{1,NULL,-3,9007199254740992,-9007199254740992,0}'::float8[]),
               ('{1,-0}'::float8[]), ('{1,9007199254740994}'::float8[]),
               ('{1,NaN}'::float8[]), ('{1,Infinity,-Infinity}'::float8[]),
               ('{1,2.5}'::float8[]), ('{NULL,NULL}'::float8[])) v(a);
-- 2^53 is the last whole number stored so: a column holding it is shorter
-- than one holding 2^53 + 2.
SELECT octet_length(pgsentinel_minute_pack(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                           '{1,9007199254740992}', NULL)) <
       octet_length(pgsentinel_minute_pack(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                           '{1,9007199254740994}', NULL)) AS whole_to_2_53;
-- A column of whole numbers written by hand: read back; one past 2^53 is
-- refused.
SELECT r.db_time FROM pgsentinel_rollup_minute_rows(
    '\x0100190a000000000000000000000000000000000604030204050000') r;
SELECT count(*) FROM pgsentinel_rollup_minute_rows(
    '\x01001e0a0000000000000000000000000000000006090382808080808080200000');
-- A batch whose session ids are out of range for integer: an error too.
SELECT count(*) FROM pgsentinel_batch_rows(
    '2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    pgsentinel_batch_pack(pgsentinel_pack('{1}'::int4[]), pgsentinel_pack('{3000000000}'::int8[]),
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL));
-- No batch has more rows than a ring holds (50000000): an input claiming
-- more elements is refused before anything is allocated for them (an
-- element of NULL is a bit of input: 6 MB would have made 50 million).
-- At the limit, an array of NULLs takes what its bitmap takes.
SELECT pgsentinel_unpack('\x0281e1eb17'::bytea || decode(repeat('00', 6250001), 'hex'));
WITH u AS MATERIALIZED (
    SELECT pgsentinel_unpack('\x0280e1eb17'::bytea || decode(repeat('00', 6250000), 'hex')) AS a)
SELECT cardinality(a) AS at_the_limit, pg_column_size(a) < 6260000 AS as_small FROM u;
SELECT pgsentinel_pack(array_fill(NULL::int8, ARRAY[50000001]));
SELECT count(*) FROM pgsentinel_batch_rows(
    '2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    pgsentinel_batch_pack(pgsentinel_pack('{1}'::int4[]),
    '\x0281e1eb17'::bytea || decode(repeat('00', 6250001), 'hex'),
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL));
SELECT count(*) FROM pgsentinel_batch_rows(
    '2020-01-01 00:00+00', array_fill(NULL::int8, ARRAY[50000001]), '{0}', '{1}', '{1}', '{f}',
    pgsentinel_batch_pack(pgsentinel_pack('{1}'::int4[]), pgsentinel_pack('{5}'::int4[]),
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL));
-- A batch's columns are read in place: a sample's values past NULLs, a
-- row's past the end of a shorter column (NULL).
SELECT sample_id, sample_period, session_id, state
  FROM pgsentinel_batch_rows(
    '2020-01-01 00:00+00', '{NULL,7,NULL,NULL,NULL,NULL,NULL,NULL,NULL,9}',
    '{0,0,0,0,0,0,0,0,0,0}', '{1,NULL,1,1,1,1,1,1,1,2}', NULL, NULL,
    pgsentinel_batch_pack(pgsentinel_pack('{2,10,1}'::int4[]), pgsentinel_pack('{5,6,NULL}'::int4[]),
    NULL, '{active}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
-- A nested query id the same as the query id is stored once
-- (nested_is_queryid 1, nested_queryids NULL) and read back as it; one
-- that differs, or a payload without that column, reads as stored.
SELECT session_id, queryid, nested_queryid
  FROM pgsentinel_batch_rows(
    '2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    pgsentinel_batch_pack(pgsentinel_pack('{1,1,1,1}'::int4[]), pgsentinel_pack('{1,2,3,4}'::int4[]),
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    '{5,5,NULL,-9223372036854775808}', '{NULL,7,NULL,NULL}', NULL, NULL, NULL, NULL, NULL,
    nested_is_queryid => pgsentinel_pack('{1,0,1,1}'::int4[])))
UNION ALL
SELECT session_id, queryid, nested_queryid
  FROM pgsentinel_batch_rows(
    '2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    pgsentinel_batch_pack(pgsentinel_pack('{1}'::int4[]), pgsentinel_pack('{5}'::int4[]),
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    '{5}', '{9}', NULL, NULL, NULL, NULL, NULL));
-- A texts column whose texts repeat is stored as ids into its distinct
-- texts (src/archive/batch_format.c): the rows read back the same, NULLs
-- and the empty text included, and so do the rows a fleet keeps of it.
WITH t AS (
  SELECT array_agg(CASE (i * 7919) % 13 % 4 WHEN 0 THEN 'active'
                   WHEN 1 THEN 'idle in transaction' WHEN 2 THEN NULL ELSE '' END
                   ORDER BY i) AS states,
         pgsentinel_pack(array_agg(1 + i % 3 ORDER BY i)) AS samples,
         pgsentinel_pack(array_agg(i ORDER BY i)) AS sessions
    FROM generate_series(1, 300) i),
 p AS (
  SELECT pgsentinel_batch_pack(t.samples, t.sessions, NULL, t.states,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL) AS row_data, t.states FROM t),
 back AS (
  SELECT r.session_id, r.state
    FROM p, pgsentinel_batch_rows('2020-01-01 00:00+00', '{7,8,9}', '{0,1,2}', '{1,1,1}',
                                  '{1,1,1}', '{f,f,f}', p.row_data) r),
 kept AS (
  SELECT r.session_id, r.state
    FROM p, pgsentinel_batch_rows('2020-01-01 00:00+00', '{7,9}', '{0,2}', '{1,1}',
                                  '{1,1}', '{f,f}',
                                  pgsentinel_batch_keep(p.row_data, '{1,NULL,2}')) r)
SELECT (SELECT count(*) FROM back) AS rows_back,
       (SELECT array_agg(state ORDER BY session_id) FROM back)
         IS NOT DISTINCT FROM (SELECT states FROM p) AS states_back,
       (SELECT count(*) FROM kept) AS rows_kept,
       (SELECT array_agg(state ORDER BY session_id) FROM kept)
         IS NOT DISTINCT FROM (SELECT array_agg(u.s ORDER BY u.i) FROM p,
                                 unnest(p.states) WITH ORDINALITY u(s, i)
                                WHERE u.i % 3 <> 1) AS states_kept;
-- A column of ids written by hand (two distinct texts, 'active' and the
-- empty text; ids 1, NULL, 0) reads back as those texts.
SELECT session_id, state, state IS NULL AS is_null
  FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    ('\x01003d' || '15' || '010401020000' || '0000' || '0000'
     || '040e' || '0206616374697665' || '00' || '0403050200'
     || repeat('0000', 17))::bytea);
-- An id that names none of the column's texts is an error.
SELECT count(*) FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    ('\x010032' || '15' || '01020102' || '0000' || '0000' || '04050101610104'
     || repeat('0000', 17))::bytea);
-- A texts column whose texts differ by their numbers is stored with the
-- numbers cut out (src/archive/batch_format.c): 300 lock targets take a
-- few bytes, and every text reads back byte for byte, its bytes 0x01
-- (the escape), leading zeros, runs of more than 18 digits, texts of more
-- than 64 numbers, multibyte characters beside digits, NULLs and the
-- empty text included; so do the rows a fleet keeps of it.
WITH t AS (
  SELECT array_agg('transaction ' || (1000 + i) ORDER BY i) AS targets,
         array_agg(CASE i % 10
                   WHEN 0 THEN E'a\x01b' || i || E'\x01\x02' || i
                   WHEN 1 THEN '007 0 00 ' || i
                   WHEN 2 THEN '1234567890123456789 ' || i || ' 123456789012345678'
                   WHEN 3 THEN repeat(i || ' ', 70)
                   WHEN 4 THEN 'é' || i || 'ü' || i || 'é'
                   WHEN 5 THEN NULL WHEN 6 THEN '' WHEN 7 THEN '-5 1.5e10 x' || i || 'y'
                   ELSE 'UPDATE t SET v = v + ' || (i * 7919 % 5000) || ' WHERE id = ' || i % 10 || ';'
                   END ORDER BY i) AS texts,
         pgsentinel_pack(array_agg(1 + i % 3 ORDER BY i)) AS samples,
         pgsentinel_pack(array_agg(i ORDER BY i)) AS sessions
    FROM generate_series(1, 300) i),
 p AS (
  SELECT pgsentinel_batch_pack(t.samples, t.sessions, NULL, t.texts,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL) AS row_data,
         pgsentinel_batch_pack(t.samples, t.sessions, NULL, t.targets,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL) AS targets_data, t.texts, t.targets FROM t),
 back AS (
  SELECT r.session_id, r.state
    FROM p, pgsentinel_batch_rows('2020-01-01 00:00+00', '{7,8,9}', '{0,1,2}', '{1,1,1}',
                                  '{1,1,1}', '{f,f,f}', p.row_data) r),
 targets_back AS (
  SELECT r.session_id, r.state
    FROM p, pgsentinel_batch_rows('2020-01-01 00:00+00', '{7,8,9}', '{0,1,2}', '{1,1,1}',
                                  '{1,1,1}', '{f,f,f}', p.targets_data) r),
 kept AS (
  SELECT r.session_id, r.state
    FROM p, pgsentinel_batch_rows('2020-01-01 00:00+00', '{7,9}', '{0,2}', '{1,1}',
                                  '{1,1}', '{f,f}',
                                  pgsentinel_batch_keep(p.row_data, '{1,NULL,2}')) r)
SELECT (SELECT octet_length(targets_data) < 80 FROM p) AS targets_small,
       (SELECT array_agg(state ORDER BY session_id) FROM targets_back)
         = (SELECT targets FROM p) AS targets_back,
       (SELECT count(*) FROM back) AS rows_back,
       (SELECT array_agg(state ORDER BY session_id) FROM back)
         IS NOT DISTINCT FROM (SELECT texts FROM p) AS texts_back,
       (SELECT count(*) FROM kept) AS rows_kept,
       (SELECT array_agg(state ORDER BY session_id) FROM kept)
         IS NOT DISTINCT FROM (SELECT array_agg(u.s ORDER BY u.i) FROM p,
                                 unnest(p.texts) WITH ORDINALITY u(s, i)
                                WHERE u.i % 3 <> 1) AS texts_kept;
-- A column with its numbers cut out written by hand (texts 'tx ' and a
-- number, 'x', a number, 'y', a number; ids 0, 1, 0; the numbers at the
-- first position 5, 12, 7, at the second 9) reads back as 'tx 5',
-- 'x12y9', 'tx 7'.
SELECT session_id, state
  FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    '\x01004b1501040102000000000000051c020574782001020678010279010204030002000204030a180e02031200000000000000000000000000000000000000000000000000000000000000000000'::bytea);
-- Such a column is checked whole before a row is read: an unknown escape,
-- fewer numbers than marks, a number of more than 18 digits (also when
-- only the payload is checked, as a fleet does before landing it), an id
-- naming no text, numbers at more than 64 positions are errors.
SELECT count(*) FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    '\x01004b1501040102000000000000051c020574782001030678010279010204030002000204030a180e02031200000000000000000000000000000000000000000000000000000000000000000000'::bytea);
SELECT count(*) FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    '\x01004a1501040102000000000000051b020574782001020678010279010204030002000203030a1802031200000000000000000000000000000000000000000000000000000000000000000000'::bytea);
SELECT count(*) FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    '\x01005315010401020000000000000524020574782001020678010279010204030002000204030a180e0a038080a0f6f4acdbe01b00000000000000000000000000000000000000000000000000000000000000000000'::bytea);
SELECT pgsentinel_batch_format(
    '\x01005315010401020000000000000524020574782001020678010279010204030002000204030a180e0a038080a0f6f4acdbe01b00000000000000000000000000000000000000000000000000000000000000000000'::bytea);
SELECT count(*) FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    '\x01004b1501040102000000000000051c020574782001020678010279010204030004000204030a180e02031200000000000000000000000000000000000000000000000000000000000000000000'::bytea);
SELECT count(*) FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
    '\x0100c2011501040102000000000000059201010574782001020403000000410403020406010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010301030103010300000000000000000000000000000000000000000000000000000000000000000000'::bytea);
-- A column of ids claims at most the 4096 distinct texts a writer keeps:
-- 4097 empty ones, a few bytes compressed, are refused before anything
-- is allocated for them.
SELECT pgsentinel_batch_format(('\x0100b52015010401020000000000000485208120'
    || repeat('00', 4097) || '030000000000000000000000000000000000000000000000000000000000000000000000')::bytea);
-- The rows' payload (src/archive/batch_format.c): its format number; a
-- format this version does not read is refused with the way out; bytes
-- pgsentinel_batch_pack() did not write are an error, never a read past
-- the end.
SELECT pgsentinel_batch_format(pgsentinel_batch_pack(NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL)) AS format;
SELECT pgsentinel_batch_format('\x0200');
SELECT pgsentinel_batch_format('\x01');
SELECT pgsentinel_batch_format('\x010005');
SELECT pgsentinel_batch_format('\x0102ffffff7f00');
-- (a compressed body cut short)
CREATE TEMP TABLE pgs_payload AS
SELECT pgsentinel_batch_pack(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL, array_agg('SELECT'::text), NULL, NULL,
           NULL, NULL, NULL, NULL, NULL) AS p
  FROM generate_series(1, 100);
SELECT get_byte(p, 1) AS zstd FROM pgs_payload;
SELECT pgsentinel_batch_format(substring(p from 1 for octet_length(p) - 2)) FROM pgs_payload;
SELECT pgsentinel_batch_format('\x01070100');
SELECT pgsentinel_batch_format('\x01000102');
-- (the first column, of integers, said to be of texts)
SELECT pgsentinel_batch_format(('\x01002c15020100' || repeat('0000', 20))::bytea);
-- (a column stored in a way a newer version writes: refused with the way out)
SELECT pgsentinel_batch_format(('\x01002c15090100' || repeat('0000', 20))::bytea);

-- A batch's samples are one payload too (pgsentinel_sample_pack(), read
-- back as arrays by pgsentinel_batch_samples()): every value, NULLs, a
-- column of NULLs (as NULLs of the batch's length) and no sample at all
-- read back as they went in; pgsentinel_batch_format() checks one as
-- 'samples'; columns of unequal lengths, a flag that is not 0 or 1, a rows
-- payload or bytes cut short are refused.
SELECT a.* FROM pgsentinel_batch_samples(pgsentinel_sample_pack(
    '{7,8,9223372036854775807}', '{0,1000001,-5}', '{1,1,1.5}', '{1,NULL,0.25}',
    '{3,0,-2147483648}', '{f,t,NULL}')) a;
SELECT a.* FROM pgsentinel_batch_samples(pgsentinel_sample_pack(
    '{7,8}', '{0,1000000}', NULL, NULL, NULL, '{f,NULL}')) a;
SELECT pgsentinel_batch_samples(pgsentinel_sample_pack(
    '{7,8}', '{0,1000000}', NULL, NULL, NULL, '{f}'));
SELECT a.* FROM pgsentinel_batch_samples(pgsentinel_sample_pack(
    '{}', '{}', '{}', '{}', '{}', '{}')) a;
SELECT pgsentinel_batch_format(pgsentinel_sample_pack('{7}', '{0}', '{1}', '{1}', '{3}',
                                                      '{f}'), 'samples') AS format;
SELECT pgsentinel_batch_samples('\x01000f060000000000000000000001020304');
SELECT pgsentinel_batch_samples('\x01000f0600000000000000000000010203');
SELECT pgsentinel_batch_format(pgsentinel_batch_pack(NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL), 'samples');
SELECT pgsentinel_batch_samples(substring(pgsentinel_sample_pack('{7}', '{0}', '{1}', '{1}',
                                                                 '{3}', '{f}') from 1 for 4));

-- A layout's new columns are added at its end: a payload written before
-- the lock columns (21 row columns) is read, those columns NULL; one with
-- more columns than this version knows is refused, not cut.
WITH p AS (SELECT pgsentinel_pack('{1}'::int4[]) AS rs,
                  pgsentinel_pack('{7}'::int4[]) AS sid),
     b AS (SELECT '\x1501'::bytea || set_byte('\x00'::bytea, 0, length(rs)) || rs
                  || '\x01'::bytea || set_byte('\x00'::bytea, 0, length(sid)) || sid
                  || decode(repeat('0000', 19), 'hex') AS body FROM p)
SELECT x.sample_id, x.session_id, x.state, x.lock_type, x.lock_relation,
       x.lock_mode, x.blocker_lock_modes
  FROM b, pgsentinel_batch_rows('2020-01-01 00:00+00'::timestamptz, '{5}'::int8[],
          '{0}'::int8[], '{1}'::float8[], '{1}'::float8[], '{f}'::bool[],
          '\x0100'::bytea || set_byte('\x00'::bytea, 0, length(body)) || body) x;
SELECT pgsentinel_batch_format('\x0100011c'::bytea, 'rows'::text);
-- (a text longer than its column)
SELECT pgsentinel_batch_format(('\x01002c15000000000000020101' || repeat('0000', 17))::bytea);
SELECT pgsentinel_batch_format('\x02');
-- (a number column claiming 2^64 - 1 elements and a bitmap, in 40 bytes;
-- one claiming 2^61 + 1 without; a NULL flag other than 0 and 1)
SELECT pgsentinel_batch_format('\x01003414000000000000000000000000030bffffffffffffffffff01010000000000000000000000000000000000000000000000000000');
SELECT pgsentinel_batch_format('\x01003b1400000000000000000000000003128180808080808080200000000000000000000000000000000000000000000000000000000000000000000000');
SELECT pgsentinel_batch_format('\x01002b14000000000000000000000000030201070000000000000000000000000000000000000000000000000000');
-- A text not valid in the server's encoding (a zero byte) is refused.
DO $$
BEGIN
    PERFORM count(*) FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}',
        '{0}', '{1}', '{1}', '{f}',
        ('\x01002e15000000000000020301020' || '0' || repeat('0000', 17))::bytea);
    RAISE WARNING 'read';
EXCEPTION WHEN character_not_in_repertoire THEN
    RAISE WARNING 'refused: %', SQLSTATE;
END $$;
-- Its rows read back, texts and oids included; of a sample map, the rows
-- of the kept samples, renumbered (the fleet's landing of a batch it has
-- the first samples of), the others left out.
SELECT sample_id, session_id, state, query_values, blocker_usesysid
  FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{10,20,30}', '{0,1,2}',
       '{1,1,1}', '{1,1,1}', '{f,f,f}',
       pgsentinel_batch_pack(pgsentinel_pack('{1,2,3,2}'::int4[]),
           pgsentinel_pack('{5,6,7,8}'::int4[]), NULL, '{a,b,NULL,d}', NULL,
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, '{x,NULL,z,w}', NULL,
           NULL, NULL, NULL, NULL, NULL, '{10,11,12,13}'::oid[], NULL));
SELECT sample_id, session_id, state, query_values, blocker_usesysid
  FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{20,30}', '{1,2}',
       '{1,1}', '{1,1}', '{f,f}',
       pgsentinel_batch_keep(
           pgsentinel_batch_pack(pgsentinel_pack('{1,2,3,2}'::int4[]),
               pgsentinel_pack('{5,6,7,8}'::int4[]), NULL, '{a,b,NULL,d}', NULL,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, '{x,NULL,z,w}', NULL,
               NULL, NULL, NULL, NULL, NULL, '{10,11,12,13}'::oid[], NULL),
           '{NULL,1,2}'));
-- A statements batch's payload (pgsentinel_statement_batch_pack()): its
-- readings read back, numbers exact, NULL and booleans included; of a
-- time, the readings taken after it (a fleet's landing).
CREATE TEMP TABLE pgs_readings AS
SELECT pgsentinel_statement_batch_pack(pgsentinel_pack('{0,1000000,2000000}'::int8[]),
           pgsentinel_pack('{1000000,1000000,NULL}'::int8[]),
           pgsentinel_pack('{7,8,9}'::int8[]), '{42,42,-5}', pgsentinel_pack('{3,NULL,1}'::int8[]),
           NULL, '{1.5,NULL,0.1}', NULL, '{NULL,NULL,2e-300}', NULL, NULL, NULL,
           NULL, NULL, NULL, pgsentinel_pack('{9223372036854775807,1,NULL}'::int8[]),
           '{10,10,4294967295}', '{1,1,1}', '{t,t,f}', '{f,t,NULL}') AS p;
SELECT r.*
  FROM pgs_readings, pgsentinel_statement_rows('2020-01-01 00:00+00', p) r;
SELECT r.sample_id
  FROM pgs_readings,
       pgsentinel_statement_rows('2020-01-01 00:00+00',
           pgsentinel_statement_batch_keep('2020-01-01 00:00+00', p,
                                           '2020-01-01 00:00:01+00')) r;
SELECT pgsentinel_batch_format(p) AS format FROM pgs_readings;
-- A payload is checked as the rows of the table it lands in.
SELECT pgsentinel_batch_format(p, 'statements') AS format FROM pgs_readings;
SELECT pgsentinel_batch_format(p, 'rows') FROM pgs_readings;
SELECT pgsentinel_batch_format(p, 'sessions') FROM pgs_readings;
-- A row whose sample index no sample has, however large, is left out.
SELECT count(*) AS one_row
  FROM pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}', '{f}',
       pgsentinel_batch_pack(pgsentinel_pack('{3000000000,1,-1}'::int8[]),
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
-- What repeats from row to row is compressed (zstd) in the payload.
SELECT count(*) AS rows_read_back,
       octet_length(p) < 1000 AS compressed
  FROM (SELECT pgsentinel_batch_pack(pgsentinel_pack(array_agg(1)),
                   pgsentinel_pack(array_agg(i % 3)), NULL,
                   array_agg('idle in transaction'::text), NULL, NULL, NULL,
                   NULL, NULL, NULL, NULL, NULL, NULL,
                   array_agg('SELECT'::text), NULL, NULL, NULL, NULL, NULL,
                   NULL, NULL) AS p
          FROM generate_series(1, 1000) i) x,
       pgsentinel_batch_rows('2020-01-01 00:00+00', '{7}', '{0}', '{1}', '{1}',
                             '{f}', x.p) r
 WHERE r.state = 'idle in transaction' AND r.cmdtype = 'SELECT'
 GROUP BY octet_length(p);
-- A minute's blocking parts read back from their payload as they went in
-- (times, infinite ones too, "char", blocked_by as an array); a payload
-- of another layout, or cut short, is refused.
SELECT r.kind, r.root_pid, r.blocked_by, r.samples, r.db_time, r.last_time,
       r.first_time, r.xact_start, r.query, r.lock_mode
  FROM pgsentinel_rollup_blocking_minute_rows(pgsentinel_blocking_minute_pack(
           '{b,r}'::"char"[], '{7,7}'::int4[], '{100,NULL}'::int4[], '{10,NULL}'::oid[],
           '{2,NULL}'::int4[], '{"{7,8}",NULL}'::text[], '{4,5}'::int8[],
           '{2.5,0}'::float8[],
           '{"2020-01-01 10:06:30.000001+00","2020-01-01 10:06:31+00"}'::timestamptz[],
           '{10,NULL}'::oid[], '{u,NULL}'::text[], '{active,NULL}'::text[],
           '{Lock,NULL}'::text[], '{tuple,NULL}'::text[], '{"UPDATE t",NULL}'::text[],
           '{-infinity,"2020-01-01 10:06:01+00"}'::timestamptz[], NULL::text[], NULL::text[],
           '{infinity,NULL}'::timestamptz[], NULL::text[],
           '{ShareLock,NULL}'::text[], NULL::text[])) r;
SELECT count(*) FROM pgsentinel_rollup_minute_rows(
    pgsentinel_session_minute_pack('{1}'::int4[], NULL, NULL, NULL, NULL, NULL, NULL,
                                   NULL, NULL, NULL, NULL, NULL));
SELECT count(*) FROM pgsentinel_rollup_session_minute_rows(
    substring(pgsentinel_session_minute_pack('{1}'::int4[], NULL, NULL, NULL, NULL, NULL,
                                             NULL, NULL, NULL, NULL, NULL, NULL)
              from 1 for 6));
-- The batches' times are microseconds after another time, both ways exact
-- (src/archive/batch_times.c), across days and backwards; what overflows
-- is an error; an infinite time stays infinite and has no distance.
SET timezone = 'UTC';
SELECT pgsentinel_us_between('2020-01-01 00:00+00', '2020-03-01 00:00:00.000001+00') AS two_months,
       pgsentinel_us_between('2020-01-01 00:00:01+00', '2020-01-01 00:00+00') AS back,
       pgsentinel_us_after('2020-01-01 00:00+00', 5184000000001) AS after_two_months,
       pgsentinel_us_after('2020-01-01 00:00+00', -1) AS one_us_before,
       pgsentinel_us_after('infinity', 1) AS infinite,
       pgsentinel_us_after(NULL, 1) IS NULL AND pgsentinel_us_between(now(), NULL) IS NULL AS nulls;
SELECT pgsentinel_us_after('2020-01-01 00:00+00', 9223372036854775807);
SELECT pgsentinel_us_after('294276-12-31 00:00+00', 86400000000);
SELECT pgsentinel_us_between('-infinity', '2020-01-01 00:00+00');
SELECT pgsentinel_us_between('4713-01-01 00:00+00 BC', '294276-12-31 00:00+00');
RESET timezone;
