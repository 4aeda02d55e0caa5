--
-- pg_active_session_history: columns, types, and what a sample holds.
--

-- Every pgsentinel 1.4 column, in its order and type, nested_queryid right
-- after queryid (1.5), then the 2.0 additions.
SELECT attnum, attname, format_type(atttypid, atttypmod)
FROM pg_attribute
WHERE attrelid = 'pg_active_session_history'::regclass AND attnum > 0
ORDER BY attnum;

-- Readable by everybody, as in 1.4.
SELECT has_table_privilege('public', 'pg_active_session_history', 'SELECT');

-- A session burning CPU is sampled with 'CPU' as wait event type and name.
SELECT pgs_spin_until_sampled();
SELECT wait_event_type, wait_event, state, cmdtype, backend_type,
       usename = current_user AS own_user, datname = current_database() AS own_db,
       application_name, client_port, client_addr,
       queryid IS NOT NULL AS has_queryid,
       blockers, blockerpid, blocker_state, blocking_pids
FROM pg_active_session_history
WHERE pid = pg_backend_pid() AND wait_event_type = 'CPU'
  AND top_level_query = 'SELECT pgs_spin_until_sampled();'
  AND sample_id <= current_setting('pgs.seen_sample')::bigint
ORDER BY sample_id DESC
LIMIT 1;

-- A nested statement: queryid is the top-level statement's (the one
-- pg_stat_statements records), nested_queryid and query the inner one's.
SELECT pgs_sleep_until_sampled();
SELECT wait_event_type, wait_event, cmdtype,
       top_level_query, query,
       queryid <> nested_queryid AS ids_differ
FROM pg_active_session_history
WHERE pid = pg_backend_pid() AND wait_event = 'PgSleep'
ORDER BY sample_id DESC -- the call above's, not an older sleep's
LIMIT 1;
SELECT count(*) > 0 AS top_level_id_matches_pgss
FROM pg_active_session_history h
JOIN pg_stat_statements s ON s.queryid = h.queryid AND s.toplevel
WHERE h.pid = pg_backend_pid() AND h.wait_event = 'PgSleep'
  AND s.query = 'SELECT pgs_sleep_until_sampled()';
SELECT count(*) > 0 AS nested_id_matches_pgss_nested
FROM pg_active_session_history h
JOIN pg_stat_statements s ON s.queryid = h.nested_queryid
WHERE h.pid = pg_backend_pid() AND h.wait_event = 'PgSleep'
  AND s.query = 'SELECT pg_sleep($1)';

-- Every row of a sample shares one ash_time, and sample ids grow with time.
SELECT count(*) AS samples_with_mixed_times
FROM (SELECT sample_id FROM pg_active_session_history
      GROUP BY sample_id HAVING count(DISTINCT ash_time) > 1) s;
SELECT count(*) AS out_of_order
FROM (SELECT sample_id, ash_time,
             lag(ash_time) OVER (ORDER BY sample_id) AS prev
      FROM (SELECT DISTINCT sample_id, ash_time FROM pg_active_session_history) d) o
WHERE ash_time < prev;

-- The sampler never records itself.
SELECT count(*) AS sampler_rows
FROM pg_active_session_history h
WHERE h.pid = (SELECT worker_pid FROM pgsentinel_status());

-- Every scan of the view within one query sees the same read of the ring:
-- "the newest sample" is never empty, although the sampler (every 10 ms
-- here) adds samples between the two scans of a query.  At least 200
-- queries and 5 new samples; this loop's own session is sampled, so no
-- sample is empty.
DO $$
DECLARE
    misses int := 0;
    queries int := 0;
    samples_before bigint;
    deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
    SELECT samples_taken INTO samples_before FROM pgsentinel_status();
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_active_session_history
                       WHERE sample_id = (SELECT max(sample_id)
                                          FROM pg_active_session_history)) THEN
            misses := misses + 1;
        END IF;
        queries := queries + 1;
        EXIT WHEN queries >= 200 AND
            (SELECT samples_taken FROM pgsentinel_status()) >= samples_before + 5;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'the sampler took no 5 samples within 60 s';
        END IF;
    END LOOP;
    IF misses > 0 THEN
        RAISE EXCEPTION 'newest sample empty in % of % queries', misses, queries;
    END IF;
END $$;

-- The view scans the ring through a foreign table: only the columns a
-- query uses are computed (for count(*), those of the view's filter:
-- weight and state), and the planner knows how many rows there are.
EXPLAIN (COSTS OFF) SELECT count(*) FROM pg_active_session_history;
EXPLAIN (COSTS OFF)
SELECT wait_event_type, wait_event, count(*) FROM pg_active_session_history
WHERE pid <> 0 GROUP BY 1, 2;
-- The estimate is the rows in the ring, not a function scan's 1000.
CREATE FUNCTION pgs_estimated_rows(q text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
    RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
END $$;
SELECT pgs_estimated_rows('SELECT * FROM pg_active_session_history')
       BETWEEN (SELECT ash_rows FROM pgsentinel_status()) - 1000
           AND (SELECT ash_rows FROM pgsentinel_status()) + 1000
       AS estimate_is_ring_rows;

-- Same rows through the foreign table and through the function, all
-- columns ... (the function has 2.0's columns, the view 2.1's: compare
-- 2.0's).  Each scan reads the ring: the sampler may complete the query id
-- or command type of a statement's rows between the two (a statement that
-- waited for a lock while parsed or planned, e.g. behind the archiver's
-- DDL), so the statements with a row without either in a scan are left out.
CREATE TEMP VIEW ash_2_0 AS
  SELECT ash_time, datid, datname, pid, leader_pid, usesysid, usename,
         application_name, client_addr, client_hostname, client_port,
         backend_start, xact_start, query_start, state_change,
         wait_event_type, wait_event, state, backend_xid, backend_xmin,
         top_level_query, query, cmdtype, queryid, nested_queryid,
         backend_type, blockers, blockerpid, blocker_state, sample_id,
         blocking_pids
  FROM pg_active_session_history;
WITH v AS MATERIALIZED (SELECT * FROM ash_2_0),
     f AS MATERIALIZED (SELECT * FROM pg_active_session_history()),
     completed_later AS (
        SELECT pid, query_start FROM v WHERE queryid IS NULL OR cmdtype = 'UNKNOWN'
        UNION SELECT pid, query_start FROM f WHERE queryid IS NULL OR cmdtype = 'UNKNOWN'),
     vs AS (SELECT * FROM v WHERE NOT EXISTS (
        SELECT FROM completed_later c
        WHERE c.pid = v.pid AND c.query_start IS NOT DISTINCT FROM v.query_start)),
     fs AS (SELECT * FROM f WHERE NOT EXISTS (
        SELECT FROM completed_later c
        WHERE c.pid = f.pid AND c.query_start IS NOT DISTINCT FROM f.query_start))
SELECT count(*) AS rows_that_differ FROM (
    (SELECT * FROM vs EXCEPT ALL SELECT * FROM fs)
    UNION ALL
    (SELECT * FROM fs EXCEPT ALL SELECT * FROM vs)) d;
-- ... and a few: the columns not asked for are not mixed up with others.
SELECT count(*) AS rows_that_differ FROM (
    (SELECT sample_id, pid, wait_event, query FROM pg_active_session_history
     EXCEPT ALL SELECT sample_id, pid, wait_event, query FROM pg_active_session_history())
    UNION ALL
    (SELECT sample_id, pid, wait_event, query FROM pg_active_session_history()
     EXCEPT ALL SELECT sample_id, pid, wait_event, query FROM pg_active_session_history)) d;
SELECT count(*) > 0 AS has_rows FROM pg_active_session_history;

-- The ring cannot be written, and the wrapper takes no options.
INSERT INTO pgsentinel_ash_ring (pid) VALUES (1);
CREATE SERVER pgs_other FOREIGN DATA WRAPPER pgsentinel_fdw OPTIONS (size '10');
