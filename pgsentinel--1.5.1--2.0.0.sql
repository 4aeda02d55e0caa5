/* pgsentinel--1.5.1--2.0.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgsentinel UPDATE TO '2.0.0'" to load this file. \quit

-- This released script was edited after its release only to schema-qualify
-- the operators and functions the statements-history helpers bind (and to
-- write the casts the unqualified operators made implicitly), as PostgreSQL
-- did for its own contrib scripts (CVE-2020-14350, CVE-2022-2625): the
-- objects it creates and what they return are unchanged.  See
-- docs/security.md.

-- 2.0.0 replaces the objects of 1.5.1: the views gain columns, the
-- internal get_parsedinfo() goes, pgsentinel_status() and the statements
-- history helpers are new.  The two views are not dropped, so that views
-- and functions users built on them survive the update: each is redefined
-- in place (CREATE OR REPLACE VIEW keeps its columns and appends the new
-- ones) before the function it read is dropped and created anew.
DROP FUNCTION get_parsedinfo(int);

-- The view reads the ring through a foreign table (src/ash_fdw.c): rows are
-- streamed and only the columns a query uses are computed, where a function
-- in FROM materializes every column of every row first.  The function
-- pg_active_session_history(), below, returns the same rows (for direct
-- calls).
CREATE FUNCTION pgsentinel_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FUNCTION pgsentinel_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER pgsentinel_fdw
  HANDLER pgsentinel_fdw_handler
  VALIDATOR pgsentinel_fdw_validator;

CREATE SERVER pgsentinel_server FOREIGN DATA WRAPPER pgsentinel_fdw;

CREATE FOREIGN TABLE pgsentinel_ash_ring (
    ash_time timestamptz,
    datid oid,
    datname text,
    pid integer,
    leader_pid integer,
    usesysid oid,
    usename text,
    application_name text,
    client_addr text,
    client_hostname text,
    client_port integer,
    backend_start timestamptz,
    xact_start timestamptz,
    query_start timestamptz,
    state_change timestamptz,
    wait_event_type text,
    wait_event text,
    state text,
    backend_xid xid,
    backend_xmin xid,
    top_level_query text,
    query text,
    cmdtype text,
    queryid bigint,
    nested_queryid bigint,
    backend_type text,
    blockers integer,
    blockerpid integer,
    blocker_state text,
    sample_id bigint,
    blocking_pids integer[]
) SERVER pgsentinel_server;

CREATE OR REPLACE VIEW pg_active_session_history AS
  SELECT * FROM pgsentinel_ash_ring;

GRANT SELECT ON pg_active_session_history TO PUBLIC;

DROP FUNCTION pg_active_session_history();

-- Active session history: every column of pgsentinel 1.4 in its order and
-- type, nested_queryid right after queryid as in 1.5, then the additions.
CREATE FUNCTION pg_active_session_history(
    OUT ash_time timestamptz,
    OUT datid oid,
    OUT datname text,
    OUT pid integer,
    OUT leader_pid integer,
    OUT usesysid oid,
    OUT usename text,
    OUT application_name text,
    OUT client_addr text,
    OUT client_hostname text,
    OUT client_port integer,
    OUT backend_start timestamptz,
    OUT xact_start timestamptz,
    OUT query_start timestamptz,
    OUT state_change timestamptz,
    OUT wait_event_type text,
    OUT wait_event text,
    OUT state text,
    OUT backend_xid xid,
    OUT backend_xmin xid,
    OUT top_level_query text,
    OUT query text,
    OUT cmdtype text,
    OUT queryid bigint,
    OUT nested_queryid bigint,
    OUT backend_type text,
    OUT blockers integer,
    OUT blockerpid integer,
    OUT blocker_state text,
    OUT sample_id bigint,
    OUT blocking_pids integer[]
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_active_session_history_2_0'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

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
-- (the view, and any view built on it, keeps reading the old function,
-- renamed, while the new one is created)
ALTER FUNCTION pg_stat_statements_history()
  RENAME TO pgsentinel_pgssh_before_update;

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
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE OR REPLACE VIEW pg_stat_statements_history AS
  SELECT * FROM pg_stat_statements_history();

DROP FUNCTION pgsentinel_pgssh_before_update();

GRANT SELECT ON pg_stat_statements_history TO PUBLIC;

-- Per-interval deltas of the cumulative counters, for each statement
-- (userid, dbid, queryid, toplevel) between two consecutive readings taken
-- in [since, until].  The first reading of a series has no interval.  When
-- a counter went down (pg_stat_statements_reset(), entry evicted and
-- re-created) the interval is marked reset and its deltas are NULL, never
-- negative: any counter returned that went down marks it.  Rows whose
-- queryid is hidden from the caller are left out.  The bodies of this
-- function and the next are SQL-standard (BEGIN ATOMIC): their references
-- are bound when they are created, so they keep working wherever the
-- extension is installed or moved (it is relocatable) and whatever the
-- caller's search_path.  Being bound while this script runs with the
-- search_path set to the installation schema, every operator and function
-- of pg_catalog they use is qualified, and the operands of the "=" hidden
-- in NULLIF have exactly the types of a pg_catalog operator (bigint =
-- integer, double precision = double precision): otherwise an operator or
-- function with a closer match, created in that schema by its owner, would
-- be bound and would run with the rights of whoever calls the helper.
-- (EXTRACT's SQL syntax calls pg_catalog.extract already.)
CREATE FUNCTION pg_stat_statements_history_deltas(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now())
RETURNS TABLE (
    ash_time timestamptz,
    prev_ash_time timestamptz,
    sample_id bigint,
    userid oid,
    dbid oid,
    queryid bigint,
    toplevel boolean,
    seconds double precision,
    reset boolean,
    calls bigint,
    rows bigint,
    exec_ms double precision,
    plans bigint,
    plan_ms double precision,
    shared_blks_hit bigint,
    shared_blks_read bigint,
    shared_blks_dirtied bigint,
    shared_blks_written bigint,
    temp_blks_read bigint,
    temp_blks_written bigint,
    wal_bytes numeric)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH readings AS (
    SELECT h.*,
           pg_catalog.lag(h.ash_time) OVER w AS p_ash_time,
           pg_catalog.lag(h.calls) OVER w AS p_calls,
           pg_catalog.lag(h.rows) OVER w AS p_rows,
           pg_catalog.lag(h.total_exec_time) OVER w AS p_exec,
           pg_catalog.lag(h.plans) OVER w AS p_plans,
           pg_catalog.lag(h.total_plan_time) OVER w AS p_plan,
           pg_catalog.lag(h.shared_blks_hit) OVER w AS p_hit,
           pg_catalog.lag(h.shared_blks_read) OVER w AS p_read,
           pg_catalog.lag(h.shared_blks_dirtied) OVER w AS p_dirtied,
           pg_catalog.lag(h.shared_blks_written) OVER w AS p_written,
           pg_catalog.lag(h.temp_blks_read) OVER w AS p_temp_read,
           pg_catalog.lag(h.temp_blks_written) OVER w AS p_temp_written,
           pg_catalog.lag(h.wal_bytes) OVER w AS p_wal_bytes
    FROM pg_stat_statements_history h
    WHERE h.ash_time OPERATOR(pg_catalog.>=) since
      AND h.ash_time OPERATOR(pg_catalog.<=) until
      AND h.queryid IS NOT NULL
    WINDOW w AS (PARTITION BY h.userid, h.dbid, h.queryid, h.toplevel
                 ORDER BY h.ash_time, h.sample_id)
), intervals AS (
    SELECT r.*,
           (r.calls OPERATOR(pg_catalog.<) r.p_calls
            OR r.rows OPERATOR(pg_catalog.<) r.p_rows
            OR r.total_exec_time OPERATOR(pg_catalog.<) r.p_exec
            OR r.plans OPERATOR(pg_catalog.<) r.p_plans
            OR r.total_plan_time OPERATOR(pg_catalog.<) r.p_plan
            OR r.shared_blks_hit OPERATOR(pg_catalog.<) r.p_hit
            OR r.shared_blks_read OPERATOR(pg_catalog.<) r.p_read
            OR r.shared_blks_dirtied OPERATOR(pg_catalog.<) r.p_dirtied
            OR r.shared_blks_written OPERATOR(pg_catalog.<) r.p_written
            OR r.temp_blks_read OPERATOR(pg_catalog.<) r.p_temp_read
            OR r.temp_blks_written OPERATOR(pg_catalog.<) r.p_temp_written
            OR r.wal_bytes OPERATOR(pg_catalog.<) r.p_wal_bytes) AS was_reset
    FROM readings r
    WHERE r.p_ash_time IS NOT NULL
)
SELECT i.ash_time, i.p_ash_time, i.sample_id, i.userid, i.dbid, i.queryid,
       i.toplevel,
       extract(epoch FROM i.ash_time OPERATOR(pg_catalog.-) i.p_ash_time)::double precision,
       i.was_reset,
       CASE WHEN NOT i.was_reset THEN i.calls OPERATOR(pg_catalog.-) i.p_calls END,
       CASE WHEN NOT i.was_reset THEN i.rows OPERATOR(pg_catalog.-) i.p_rows END,
       CASE WHEN NOT i.was_reset THEN i.total_exec_time OPERATOR(pg_catalog.-) i.p_exec END,
       CASE WHEN NOT i.was_reset THEN i.plans OPERATOR(pg_catalog.-) i.p_plans END,
       CASE WHEN NOT i.was_reset THEN i.total_plan_time OPERATOR(pg_catalog.-) i.p_plan END,
       CASE WHEN NOT i.was_reset THEN i.shared_blks_hit OPERATOR(pg_catalog.-) i.p_hit END,
       CASE WHEN NOT i.was_reset THEN i.shared_blks_read OPERATOR(pg_catalog.-) i.p_read END,
       CASE WHEN NOT i.was_reset THEN i.shared_blks_dirtied OPERATOR(pg_catalog.-) i.p_dirtied END,
       CASE WHEN NOT i.was_reset THEN i.shared_blks_written OPERATOR(pg_catalog.-) i.p_written END,
       CASE WHEN NOT i.was_reset THEN i.temp_blks_read OPERATOR(pg_catalog.-) i.p_temp_read END,
       CASE WHEN NOT i.was_reset THEN i.temp_blks_written OPERATOR(pg_catalog.-) i.p_temp_written END,
       CASE WHEN NOT i.was_reset THEN i.wal_bytes OPERATOR(pg_catalog.-) i.p_wal_bytes END
FROM intervals i;
END;

-- The same intervals as per-second rates (divided by the real seconds
-- elapsed between the two readings) and per-call figures.  exec_ms_per_s
-- is the average number of executions running (x 1000).  The bigint
-- figures are cast to double precision, as they were implicitly before
-- being qualified, so that each division is exactly a pg_catalog operator.
CREATE FUNCTION pg_stat_statements_history_rates(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now())
RETURNS TABLE (
    ash_time timestamptz,
    sample_id bigint,
    userid oid,
    dbid oid,
    queryid bigint,
    toplevel boolean,
    seconds double precision,
    reset boolean,
    calls_per_s double precision,
    rows_per_s double precision,
    exec_ms_per_s double precision,
    ms_per_call double precision,
    rows_per_call double precision,
    plans_per_s double precision,
    shared_blks_hit_per_s double precision,
    shared_blks_read_per_s double precision,
    shared_blks_dirtied_per_s double precision,
    shared_blks_written_per_s double precision,
    temp_blks_read_per_s double precision,
    temp_blks_written_per_s double precision,
    wal_bytes_per_s double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT d.ash_time, d.sample_id, d.userid, d.dbid, d.queryid, d.toplevel,
       d.seconds, d.reset,
       d.calls::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.rows::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.exec_ms OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.exec_ms OPERATOR(pg_catalog./) nullif(d.calls, 0)::double precision,
       d.rows::double precision OPERATOR(pg_catalog./) nullif(d.calls, 0)::double precision,
       d.plans::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.shared_blks_hit::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.shared_blks_read::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.shared_blks_dirtied::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.shared_blks_written::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.temp_blks_read::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.temp_blks_written::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision),
       d.wal_bytes::double precision OPERATOR(pg_catalog./) nullif(d.seconds, 0::double precision)
FROM pg_stat_statements_history_deltas(since, until) d;
END;
