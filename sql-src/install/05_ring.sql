
-- The objects that pgsentinel 1.4 to 2.0 created, as 2.1.0 has them and as
-- an update reaches them (sql-src/update/05_from_2.0.0.sql): those that
-- CREATE OR REPLACE cannot redefine in the shared files.  Their names,
-- columns and types are the contract with 1.4's users
-- (docs/columns.md).

-- The view reads the ring through a foreign table (src/read/ash_fdw.c):
-- rows are streamed and only the columns a query uses are computed, where
-- a function in FROM materializes every column of every row first.
CREATE FUNCTION pgsentinel_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

-- Reads the foreign table's options: it takes none.
CREATE FUNCTION pgsentinel_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER pgsentinel_fdw
  HANDLER pgsentinel_fdw_handler
  VALIDATOR pgsentinel_fdw_validator;

CREATE SERVER pgsentinel_server FOREIGN DATA WRAPPER pgsentinel_fdw;

-- The ring's rows: every column of pgsentinel 1.4 in its order and type,
-- nested_queryid right after queryid as in 1.5, then the additions.
-- Weights (docs/archive.md): every row of the history stands for its
-- sample's period of one session's time, and every sample is listed,
-- those that found no active session too, so that average active sessions
-- is exact at any sampling period: sum(sample_period) / seconds observed.
-- weight: the DB time the row stands for, its sample's period if the
-- session was active, 0 if it was sampled idle in transaction (with
-- track_idle_trans) or because it blocked a sampled session (pgsentinel
-- samples every blocker, whatever its state, so that it is named whole).
-- blocker_usesysid: the blocker's role, which blocker_state's visibility
-- depends on (the archive keeps it with the row).  lock_type,
-- lock_relation, lock_target, lock_mode, blocker_lock_modes: the lock the
-- session waits for and what blockerpid holds on it (docs/columns.md).
CREATE FOREIGN TABLE pgsentinel_ash_ring (
    --@columns ash decl
) SERVER pgsentinel_server;

-- The same rows for direct calls (pg_active_session_history, the view, is
-- created in ring/20_samples.sql).  Every scan of the history in one query
-- reads the same rows, fixed by the query's first read (src/store/ring.c);
-- a parallel worker running the function would fix its own: PARALLEL
-- RESTRICTED, as core's pg_stat_get_activity.
CREATE FUNCTION pg_active_session_history(
    --@columns ash out fn
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_active_session_history_2_0'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- One row that says whether sampling works, and why the history is what it is.
CREATE FUNCTION pgsentinel_status(
    OUT worker_pid integer,
    OUT worker_started timestamptz,
    OUT samples_taken bigint,
    OUT last_sample_time timestamptz,
    OUT last_sample_us bigint,
    OUT max_sample_us bigint,
    OUT max_lock_wait_us bigint,
    OUT ash_rows bigint,
    OUT ash_capacity integer,
    OUT ash_rows_written bigint,
    OUT oldest_row_time timestamptz,
    OUT text_area_used bigint,
    OUT text_area_size bigint,
    OUT texts_stored bigint,
    OUT texts_dropped bigint,
    OUT rows_backfilled bigint,
    OUT sample_overruns bigint,
    OUT blockers_via_core bigint,
    OUT sampling_period double precision,
    OUT track_idle_trans boolean,
    OUT ash_row_bytes integer,
    OUT shmem_bytes bigint,
    OUT pgssh_state text,
    OUT pgssh_message text,
    OUT pgssh_worker_pid integer,
    OUT pgssh_rows bigint,
    OUT pgssh_capacity integer,
    OUT pgssh_samples bigint,
    OUT pgssh_last_us bigint,
    OUT pgssh_max_us bigint,
    OUT pgssh_requests_skipped bigint,
    OUT pgssh_keys_dropped bigint,
    OUT diagnosis text
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgsentinel_status_2_0'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- pg_stat_statements history: the 1.4 columns in their order and types,
-- then the 2.0 additions (sample_id, toplevel, and total_time -- the total
-- execution time, under the name the original description used).
CREATE FUNCTION pg_stat_statements_history(
    OUT ash_time timestamptz,
    OUT userid oid,
    OUT dbid oid,
    OUT queryid bigint,
    OUT calls bigint,
    OUT total_exec_time double precision,
    OUT rows bigint,
    OUT shared_blks_hit bigint,
    OUT shared_blks_read bigint,
    OUT shared_blks_dirtied bigint,
    OUT shared_blks_written bigint,
    OUT local_blks_hit bigint,
    OUT local_blks_read bigint,
    OUT local_blks_dirtied bigint,
    OUT local_blks_written bigint,
    OUT temp_blks_read bigint,
    OUT temp_blks_written bigint,
    OUT blk_read_time double precision,
    OUT blk_write_time double precision,
    OUT plans bigint,
    OUT total_plan_time double precision,
    OUT wal_records bigint,
    OUT wal_fpi bigint,
    OUT wal_bytes numeric,
    OUT sample_id bigint,
    OUT toplevel boolean,
    OUT total_time double precision
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_stat_statements_history_2_0'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Reads the statements ring through the function above (1.4's view).
CREATE VIEW pg_stat_statements_history AS
  SELECT * FROM pg_stat_statements_history();

GRANT SELECT ON pg_stat_statements_history TO PUBLIC;
