--
-- pgsentinel_reset(): empties both histories and their texts as readers see
-- them; sample ids go on.  Superusers only unless granted, as
-- pg_stat_statements_reset().
--

-- Wait (bounded) until the history holds a row of this session, and the
-- statements history a reading, of a sample after sample_id after.
CREATE FUNCTION pgs_wait_rows_after(after bigint) RETURNS void
LANGUAGE sql AS $$
  SELECT pgs_wait_for(format(
    'EXISTS (SELECT 1 FROM pg_active_session_history
             WHERE pid = pg_backend_pid() AND sample_id > %1$s)
     AND EXISTS (SELECT 1 FROM pg_stat_statements_history WHERE sample_id > %1$s)',
    after))
$$;

-- PUBLIC may not reset.
SELECT has_function_privilege('public', 'pgsentinel_reset()', 'EXECUTE') AS public_may_reset;

-- Both histories hold rows (this session's, and its statements').
SELECT pgs_wait_rows_after(0);
SELECT max(sample_id) AS before_max FROM pg_active_session_history \gset
SELECT text_area_used AS before_texts FROM pgsentinel_status() \gset

SELECT pgsentinel_reset() BETWEEN now() AND clock_timestamp() AS reset_now;

-- Nothing from before the reset is shown; the texts are gone with it.
SELECT count(*) AS old_ash_rows FROM pg_active_session_history
WHERE sample_id <= :before_max;
SELECT count(*) AS old_statements_rows FROM pg_stat_statements_history
WHERE sample_id <= :before_max;
SELECT text_area_used < :before_texts AS texts_emptied,
       ash_rows <= (SELECT count(*) FROM pg_active_session_history) AS ash_rows_counts_new_only
FROM pgsentinel_status();

-- New samples appear, with higher sample ids (never reused).
SELECT pgs_wait_rows_after(:before_max);
SELECT min(sample_id) > :before_max AS ids_go_on, count(*) > 0 AS new_rows
FROM pg_active_session_history;
SELECT min(sample_id) > :before_max AS ids_go_on FROM pg_stat_statements_history;

-- A query that began before a reset goes on reading its rows with their
-- texts: three statements with texts of their own are sampled, then a
-- cursor over this session's sleeping rows (no sort: rows are read as they
-- are fetched) reads one row, the history is reset, and it reads the rest.
-- The row read before the reset is the oldest: a statement sampled before
-- the three (its text not counted) makes sure it is none of theirs.
SELECT 0 AS zero FROM pgs_sleep_until_sampled() /* read first */;
SELECT 1 AS one FROM pgs_sleep_until_sampled() /* before the reset: one */;
SELECT 2 AS two FROM pgs_sleep_until_sampled() /* before the reset: two */;
SELECT 3 AS three FROM pgs_sleep_until_sampled() /* before the reset: three */;
CREATE FUNCTION pgs_texts_across_reset(OUT rows_after bigint,
                                       OUT rows_without_text bigint,
                                       OUT texts_seen bigint)
LANGUAGE plpgsql AS $$
DECLARE
    c refcursor;
    r record;
    seen text[] := '{}';
BEGIN
    rows_after := 0;
    rows_without_text := 0;
    OPEN c FOR SELECT top_level_query FROM pg_active_session_history
               WHERE pid = pg_backend_pid() AND wait_event = 'PgSleep';
    FETCH c INTO r;
    PERFORM pgsentinel_reset();
    LOOP
        FETCH c INTO r;
        EXIT WHEN NOT FOUND;
        rows_after := rows_after + 1;
        IF r.top_level_query IS NULL THEN
            rows_without_text := rows_without_text + 1;
        ELSIF r.top_level_query LIKE '%before the reset: %'
              AND NOT r.top_level_query = ANY (seen) THEN
            seen := seen || r.top_level_query;
        END IF;
    END LOOP;
    CLOSE c;
    texts_seen := cardinality(seen);
END $$;
SELECT rows_after > 0 AS read_after_reset, rows_without_text, texts_seen
FROM pgs_texts_across_reset();
DROP FUNCTION pgs_texts_across_reset();

-- A role without the privilege gets an error; one granted it may reset.
CREATE ROLE regress_reset_plain;
CREATE ROLE regress_reset_granted;
GRANT EXECUTE ON FUNCTION pgsentinel_reset() TO regress_reset_granted;
SET ROLE regress_reset_plain;
SELECT pgsentinel_reset();
RESET ROLE;
-- (rows to hide: the history was just reset)
SELECT pgs_sleep_until_sampled();
SELECT max(sample_id) AS before_max FROM pg_active_session_history \gset
SET ROLE regress_reset_granted;
SELECT pgsentinel_reset() IS NOT NULL AS granted_may_reset;
RESET ROLE;
SELECT count(*) AS old_ash_rows FROM pg_active_session_history
WHERE sample_id <= :before_max;
REVOKE EXECUTE ON FUNCTION pgsentinel_reset() FROM regress_reset_granted;
DROP ROLE regress_reset_plain, regress_reset_granted;
DROP FUNCTION pgs_wait_rows_after(bigint);

-- The functions behind the views fix their rows once per query: parallel
-- workers, which would fix their own, do not run them.
SELECT p.oid::regprocedure AS function, p.proparallel
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgsentinel')
  AND d.deptype = 'e' AND p.proname IN ('pg_active_session_history', 'pg_stat_statements_history')
ORDER BY p.oid::regprocedure::text;
