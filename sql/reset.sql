--
-- pgsentinel_reset(): empties both histories and their texts as readers see
-- them; sample ids go on.  Superusers only unless granted, as
-- pg_stat_statements_reset().
--

-- Wait (bounded) until the history holds a row of this session, and the
-- statements history a reading, of a sample after sample_id after.
CREATE FUNCTION pgs_wait_rows_after(after bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
    LOOP
        PERFORM pg_sleep(0.02);
        EXIT WHEN EXISTS (SELECT 1 FROM pg_active_session_history
                          WHERE pid = pg_backend_pid() AND sample_id > after)
              AND EXISTS (SELECT 1 FROM pg_stat_statements_history
                          WHERE sample_id > after);
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'no new rows within 60 s';
        END IF;
    END LOOP;
END $$;

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

-- A role without the privilege gets an error; one granted it may reset.
CREATE ROLE regress_reset_plain;
CREATE ROLE regress_reset_granted;
GRANT EXECUTE ON FUNCTION pgsentinel_reset() TO regress_reset_granted;
SET ROLE regress_reset_plain;
SELECT pgsentinel_reset();
RESET ROLE;
SELECT max(sample_id) AS before_max FROM pg_active_session_history \gset
SET ROLE regress_reset_granted;
SELECT pgsentinel_reset() IS NOT NULL AS granted_may_reset;
RESET ROLE;
SELECT count(*) AS old_ash_rows FROM pg_active_session_history
WHERE sample_id <= :before_max;
REVOKE EXECUTE ON FUNCTION pgsentinel_reset() FROM regress_reset_granted;
DROP ROLE regress_reset_plain, regress_reset_granted;
DROP FUNCTION pgs_wait_rows_after(bigint);
