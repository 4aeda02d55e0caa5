
-- The objects of 2.0.0 that 2.1.0 changes and that CREATE OR REPLACE
-- cannot change in the shared files (sql-src/install/05_ring.sql creates
-- them as they end here).

-- The ring's new columns (their meaning: sql-src/install/05_ring.sql).
-- pg_active_session_history is redefined on them in ring/20_samples.sql.
ALTER FOREIGN TABLE pgsentinel_ash_ring
    ADD COLUMN sample_period double precision,
    ADD COLUMN blocker_usesysid oid,
    ADD COLUMN weight double precision,
    ADD COLUMN lock_type text,
    ADD COLUMN lock_relation oid,
    ADD COLUMN lock_target text,
    ADD COLUMN lock_mode text,
    ADD COLUMN blocker_lock_modes text;

-- Every scan of the history in one query reads the same rows, fixed by the
-- query's first read (ring.c); a parallel worker running the function
-- would fix its own.  PARALLEL RESTRICTED, as core's pg_stat_get_activity.
ALTER FUNCTION pg_active_session_history() PARALLEL RESTRICTED;
ALTER FUNCTION pg_stat_statements_history() PARALLEL RESTRICTED;
