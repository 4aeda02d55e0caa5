--
-- pg_stat_statements_history: the counters of the sampled statements at
-- each sample, and the helpers that turn them into deltas and rates.
--

-- Every 1.4 column in its order and type, then sample_id, toplevel and
-- total_time.
SELECT attnum, attname, format_type(atttypid, atttypmod)
FROM pg_attribute
WHERE attrelid = 'pg_stat_statements_history'::regclass AND attnum > 0
ORDER BY attnum;

-- Wait (bounded) until the statements history is in the given state.
CREATE FUNCTION pgs_wait_pgssh_state(wanted text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '60 s';
    st text;
BEGIN
    LOOP
        SELECT pgssh_state INTO st FROM pgsentinel_status();
        EXIT WHEN st = wanted;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'statements history still "%" after 60 s, not "%"', st, wanted;
        END IF;
        PERFORM pg_sleep(0.01);
    END LOOP;
    RETURN st;
END $$;

SELECT pgs_wait_pgssh_state('ok');

-- A known workload: a function called 20 times, each call at least 30 ms
-- and until a sample saw it (a call no sample saw is never read: the
-- history would stop one call short).  By its pid and ash_time, which a
-- session under SET ROLE still sees of its own rows; by its query_start
-- too when visible.
CREATE FUNCTION pgssh_work() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    body_start timestamptz := clock_timestamp();  -- executed: has its query id
    deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
    PERFORM pg_sleep(0.03);
    WHILE NOT EXISTS (SELECT FROM pg_active_session_history
                      WHERE pid = pg_backend_pid()
                        AND ash_time >= body_start
                        AND coalesce(query_start, statement_timestamp())
                            = statement_timestamp()) LOOP
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'this session was not sampled within 60 s';
        END IF;
        PERFORM pg_sleep(0.01);
    END LOOP;
    RETURN 1;
END $$;
SELECT 'SELECT pgssh_work()' FROM generate_series(1, 20) \gexec
SELECT queryid AS work_queryid FROM pg_stat_statements
WHERE query = 'SELECT pgssh_work()' AND toplevel \gset

-- The newest reading of the statement has the counters pg_stat_statements
-- has now (the statement is no longer running: it is read once more).
CREATE FUNCTION pgssh_caught_up(qid bigint) RETURNS boolean
LANGUAGE sql AS $$
  SELECT coalesce((SELECT h.calls FROM pg_stat_statements_history h
                   WHERE h.queryid = qid AND h.toplevel AND h.userid = s.userid
                   ORDER BY h.sample_id DESC LIMIT 1) = s.calls, false)
  FROM pg_stat_statements s
  WHERE s.queryid = qid AND s.toplevel AND s.userid = current_user::regrole
$$;
SELECT pgs_wait_for(format('pgssh_caught_up(%s)', :work_queryid));

-- It was sampled, stamped like the ASH samples (a final reading can fall
-- on a sample where no session was active), and its last reading has all
-- 20 calls (the final one included).
SELECT count(*) > 1 AS readings,
       bool_or(EXISTS (SELECT 1 FROM pg_active_session_history a
                       WHERE a.sample_id = h.sample_id AND a.ash_time = h.ash_time))
           AS stamped_like_ash,
       bool_and(NOT EXISTS (SELECT 1 FROM pg_active_session_history a
                            WHERE a.sample_id = h.sample_id AND a.ash_time <> h.ash_time))
           AS never_another_time,
       max(calls) AS last_calls, max(rows) AS last_rows,
       bool_and(total_time = total_exec_time) AS total_time_is_exec_time
FROM pg_stat_statements_history h
WHERE queryid = :work_queryid;

-- The first reading plus the summed deltas equal pg_stat_statements' totals.
SELECT f.calls + sum(d.calls) = s.calls AS calls_add_up,
       f.rows + sum(d.rows) = s.rows AS rows_add_up,
       abs(f.total_exec_time + sum(d.exec_ms) - s.total_exec_time) < 0.001 AS time_adds_up,
       bool_and(NOT d.reset) AS no_reset
FROM pg_stat_statements_history_deltas(now() - interval '1 hour', now()) d
JOIN pg_stat_statements s ON s.queryid = d.queryid AND s.toplevel
CROSS JOIN LATERAL (SELECT calls, rows, total_exec_time FROM pg_stat_statements_history
                    WHERE queryid = :work_queryid AND toplevel
                    ORDER BY sample_id LIMIT 1) f
WHERE d.queryid = :work_queryid AND d.toplevel
GROUP BY f.calls, f.rows, f.total_exec_time, s.calls, s.rows, s.total_exec_time;

-- Rates: consistent with the deltas, never negative, per real second.
SELECT count(*) > 0 AS has_rates,
       bool_and(abs(r.calls_per_s * r.seconds - d.calls) < 1e-6) AS calls_rate_matches,
       bool_and(r.calls_per_s >= 0 AND r.rows_per_s >= 0 AND r.exec_ms_per_s >= 0) AS non_negative,
       bool_and(r.ms_per_call IS NULL OR r.ms_per_call >= 30) AS ms_per_call_plausible,
       bool_and(r.rows_per_call IS NULL OR r.rows_per_call = 1) AS one_row_per_call
FROM pg_stat_statements_history_rates() r
JOIN pg_stat_statements_history_deltas() d USING (sample_id, userid, dbid, queryid, toplevel)
WHERE r.queryid = :work_queryid;

-- The seed description's query runs unchanged ...
CREATE TEMP TABLE seed AS
select ash_time,queryid,delta_rows/seconds "rows_per_second",delta_calls/seconds "calls_per_second",delta_rows/delta_calls "rows_per_call"
from(
SELECT ash_time,queryid,
EXTRACT(EPOCH FROM ash_time::timestamp) - lag (EXTRACT(EPOCH FROM ash_time::timestamp))
OVER (
        PARTITION BY pgssh.queryid
        ORDER BY ash_time
        ASC) as "seconds",
rows-lag(rows)
        OVER (
        PARTITION BY pgssh.queryid
        ORDER BY ash_time
        ASC) as "delta_rows",
calls-lag(calls)
        OVER (
        PARTITION BY pgssh.queryid
        ORDER BY ash_time
        ASC) as "delta_calls"
    FROM pg_stat_statements_history pgssh) as delta
where delta_calls > 0 and seconds > 0
order by ash_time desc;

-- ... and its rows/s and calls/s equal the helper's for the same rows.
SELECT count(*) > 0 AS compared,
       bool_and(abs(s.rows_per_second - r.rows_per_s) < 1e-6) AS rows_per_s_equal,
       bool_and(abs(s.calls_per_second - r.calls_per_s) < 1e-6) AS calls_per_s_equal,
       bool_and(s.rows_per_call = r.rows_per_call) AS rows_per_call_equal
FROM seed s
JOIN pg_stat_statements_history_rates(now() - interval '1 hour', now()) r
  ON r.ash_time = s.ash_time AND r.queryid = s.queryid AND r.toplevel
WHERE s.queryid = :work_queryid;

-- A reset in the middle of the workload is a reset, never a negative rate.
SELECT 'SELECT pgssh_work()' FROM generate_series(1, 8) \gexec
SELECT pg_stat_statements_reset() IS NOT NULL AS reset_done;
SELECT 'SELECT pgssh_work()' FROM generate_series(1, 4) \gexec
SELECT pgs_wait_for(format('pgssh_caught_up(%s)', :work_queryid));
SELECT bool_or(reset) AS saw_reset,
       count(*) FILTER (WHERE calls_per_s < 0 OR rows_per_s < 0 OR exec_ms_per_s < 0
                        OR shared_blks_hit_per_s < 0 OR wal_bytes_per_s < 0) AS negative_rates,
       bool_and(calls_per_s IS NULL) FILTER (WHERE reset) AS no_rate_across_reset
FROM pg_stat_statements_history_rates()
WHERE queryid = :work_queryid;

-- A statement run under SET ROLE: pg_stat_statements records it under the
-- role, the session (and so ASH) under the user who logged in; its history
-- is kept all the same.
CREATE ROLE regress_pgssh_bob;
GRANT EXECUTE ON FUNCTION pgssh_work() TO regress_pgssh_bob;
SET ROLE regress_pgssh_bob;
-- (under SET ROLE the session sees of its own rows only what
-- pg_stat_activity would show: pgssh_work() waits for a sample by pid and
-- ash_time)
SELECT pgssh_work() AS as_bob, 'as bob' AS tag, pg_sleep(0.25) IS NULL AS slept;
SELECT pgssh_work() AS as_bob, 'as bob' AS tag, pg_sleep(0.25) IS NULL AS slept;
RESET ROLE;
SELECT pgs_wait_for($$EXISTS (SELECT 1 FROM pg_stat_statements s
                              JOIN pg_stat_statements_history h USING (queryid, dbid, userid)
                              WHERE s.query LIKE '%AS as_bob%' AND h.calls = s.calls)$$);
SELECT s.userid = 'regress_pgssh_bob'::regrole AS recorded_under_bob,
       count(h.*) > 0 AS in_history,
       bool_and(h.userid = s.userid) AS history_under_bob,
       max(h.calls) AS last_calls
FROM pg_stat_statements s
LEFT JOIN pg_stat_statements_history h USING (queryid, dbid)
WHERE s.query LIKE '%AS as_bob%'
GROUP BY s.userid;

-- pgsentinel stays in the schema it was created in: its functions name
-- its objects with that schema, bound at creation.  Moving it is refused.
CREATE SCHEMA pgs_moved;
ALTER EXTENSION pgsentinel SET SCHEMA pgs_moved;
DROP SCHEMA pgs_moved;
SELECT e.extrelocatable, n.nspname
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'pgsentinel';

-- The helpers work whatever the caller's search_path (their bodies are
-- bound when created).
SET search_path = pg_catalog;
SELECT count(*) > 0 AS rates_found
FROM public.pg_stat_statements_history_rates()
WHERE queryid = :work_queryid;
SELECT count(*) > 0 AS deltas_found
FROM public.pg_stat_statements_history_deltas(now() - interval '1 hour', now())
WHERE queryid = :work_queryid;
SELECT count(*) > 0 AS ash_found FROM public.pg_active_session_history;
RESET search_path;

-- Other roles' query ids are hidden, as pg_stat_statements hides them.
SET ROLE regress_pgssh_bob;
SELECT count(*) > 0 AS rows_visible, bool_and(queryid IS NULL) AS queryids_hidden
FROM pg_stat_statements_history WHERE userid <> 'regress_pgssh_bob'::regrole;
SELECT count(*) AS rates_for_hidden_ids
FROM pg_stat_statements_history_rates() WHERE userid <> 'regress_pgssh_bob'::regrole;
RESET ROLE;

-- A member of the statement's role is not that role: pg_stat_statements
-- hides the query ids from it all the same, and so does the history.
CREATE ROLE regress_pgssh_carol IN ROLE regress_pgssh_bob;
SET ROLE regress_pgssh_carol;
SELECT (SELECT count(*) > 0 AND bool_and(queryid IS NULL) FROM pg_stat_statements
        WHERE userid = 'regress_pgssh_bob'::regrole) AS core_hides,
       (SELECT count(*) > 0 AND bool_and(queryid IS NULL) FROM pg_stat_statements_history
        WHERE userid = 'regress_pgssh_bob'::regrole) AS history_hides;
RESET ROLE;
DROP ROLE regress_pgssh_carol;
DROP ROLE regress_pgssh_bob;

-- pg_stat_statements dropped from the worker's database: ASH goes on, the
-- history stops, status says what to run; created again, it resumes
-- without a restart.
-- A role that may create objects in its schema then makes a function of
-- its name and arguments there: the worker, a superuser, never calls it
-- (it names pg_stat_statements' objects only while it holds the extension
-- locked, and makes its plans again when it is gone).
CREATE ROLE regress_pgssh_mallory;
GRANT CREATE ON SCHEMA public TO regress_pgssh_mallory;
CREATE TABLE pgssh_planted (run_by name);
GRANT INSERT ON pgssh_planted TO regress_pgssh_mallory;
SET ROLE regress_pgssh_mallory;
CREATE TABLE public.pgssh_shape AS SELECT * FROM pg_stat_statements WHERE false;
RESET ROLE;
DROP EXTENSION pg_stat_statements;
SET ROLE regress_pgssh_mallory;
CREATE FUNCTION public.pg_stat_statements(showtext boolean)
RETURNS SETOF public.pgssh_shape
LANGUAGE plpgsql AS $$ BEGIN INSERT INTO public.pgssh_planted VALUES (current_user); END $$;
RESET ROLE;
SELECT pgs_wait_pgssh_state('pg_stat_statements not created');
SELECT pgssh_message, diagnosis LIKE 'ok%statements history: pg_stat_statements is not created%' AS diagnosis_says_so
FROM pgsentinel_status();
-- A statement that ends while pg_stat_statements is not created (which
-- keeps counting all the same) still gets its final reading once it is.
SELECT 1 AS while_not_created FROM pgs_sleep_until_sampled();
SELECT max(sample_id) AS ended_before FROM pg_active_session_history \gset
SELECT pgs_wait_for(format('(SELECT max(sample_id) FROM pg_active_session_history) > %s', :ended_before));
SELECT count(*) AS plant_runs FROM pgssh_planted;
DROP FUNCTION public.pg_stat_statements(boolean);
CREATE EXTENSION pg_stat_statements;
SELECT pgs_wait_pgssh_state('ok');
SELECT queryid AS nc_queryid FROM pg_stat_statements
WHERE query LIKE '%AS while_not_created%' \gset
SELECT pgs_wait_for(format('pgssh_caught_up(%s)', :nc_queryid));
SELECT count(*) > 0 AS history_resumed
FROM pg_stat_statements_history
WHERE queryid = :nc_queryid AND sample_id > :ended_before;

-- Moved to a schema of its own, pg_stat_statements is read there; that
-- schema renamed (by its owner) and another made under the old name, where
-- the role makes the same function: the worker's plans, which name the
-- schema, are made again under the new name, and the function is never
-- called.
CREATE SCHEMA pgssh_ext;
ALTER EXTENSION pg_stat_statements SET SCHEMA pgssh_ext;
SET search_path = public, pgssh_ext;
-- (each statement of its own shape: a query id ignores the names of columns)
SELECT 1 AS while_moved, 2 AS moved FROM pgs_sleep_until_sampled();
SELECT queryid AS mv_queryid FROM pg_stat_statements
WHERE query LIKE '%AS while_moved%' \gset
SELECT pgs_wait_for(format('pgssh_caught_up(%s)', :mv_queryid));
-- (at once: the worker's next reading finds them all)
BEGIN;
ALTER SCHEMA pgssh_ext RENAME TO pgssh_ext_renamed;
SET search_path = public, pgssh_ext_renamed;
CREATE SCHEMA pgssh_ext;
GRANT USAGE, CREATE ON SCHEMA pgssh_ext TO regress_pgssh_mallory;
SET ROLE regress_pgssh_mallory;
CREATE FUNCTION pgssh_ext.pg_stat_statements(showtext boolean)
RETURNS SETOF public.pgssh_shape
LANGUAGE plpgsql AS $$ BEGIN INSERT INTO public.pgssh_planted VALUES (current_user); END $$;
RESET ROLE;
COMMIT;
SELECT 1 AS while_renamed, 2 AS renamed, 3 AS planted FROM pgs_sleep_until_sampled();
SELECT queryid AS rn_queryid FROM pg_stat_statements
WHERE query LIKE '%AS while_renamed%' \gset
SELECT pgs_wait_for(format('pgssh_caught_up(%s)', :rn_queryid));
SELECT count(*) AS plant_runs_renamed FROM pgssh_planted;
DROP SCHEMA pgssh_ext CASCADE;
ALTER EXTENSION pg_stat_statements SET SCHEMA public;
DROP SCHEMA pgssh_ext_renamed;
RESET search_path;
DROP TABLE pgssh_shape, pgssh_planted;
REVOKE CREATE ON SCHEMA public FROM regress_pgssh_mallory;
DROP ROLE regress_pgssh_mallory;

-- One statement run by 80 users: a reading returns a row for each (the
-- statements worker's buffer grows past its first 64 rows).  The sampled
-- statement is the nested pg_sleep(), run under each role in turn.
SELECT format('CREATE ROLE regress_pgssh_u%s', i) FROM generate_series(1, 80) i \gexec
DO $$
BEGIN
    FOR i IN 1 .. 80 LOOP
        EXECUTE format('SET ROLE regress_pgssh_u%s', i);
        PERFORM pg_sleep(0.03);
        RESET ROLE;
    END LOOP;
END $$;
-- the same nested statement, sampled after the last role's: read once more
SELECT pgs_sleep_until_sampled();
SELECT pgs_wait_for($$(SELECT count(DISTINCT userid) FROM pg_stat_statements_history
                       WHERE userid::regrole::text LIKE 'regress_pgssh_u%') = 80$$);
SELECT count(DISTINCT userid) AS users_in_history,
       max(n) >= 65 AS readings_past_64_rows
FROM (SELECT sample_id, userid, count(*) OVER (PARTITION BY sample_id) AS n
      FROM pg_stat_statements_history
      WHERE queryid IN (SELECT queryid FROM pg_stat_statements
                        WHERE query = 'SELECT pg_sleep($1)')
        AND userid::regrole::text LIKE 'regress_pgssh_u%') h;
SELECT format('DROP ROLE regress_pgssh_u%s', i) FROM generate_series(1, 80) i \gexec
-- Forget them: a reading of a statement returns a row per user that ran
-- it, so while pg_stat_statements keeps 80 users' pg_sleep(), every sample
-- of a later test's sleeper writes 80 rows and the statements ring turns
-- over in seconds, under the tests that compare their readings.
SELECT pg_stat_statements_reset() IS NOT NULL AS pgss_reset;
