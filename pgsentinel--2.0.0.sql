/* pgsentinel--2.0.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pgsentinel" to load this file. \quit

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

CREATE VIEW pg_active_session_history AS
  SELECT * FROM pg_active_session_history();

GRANT SELECT ON pg_active_session_history TO PUBLIC;

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
    OUT sampling_period double precision,
    OUT track_idle_trans boolean,
    OUT ash_row_bytes integer,
    OUT shmem_bytes bigint,
    OUT diagnosis text
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgsentinel_status_2_0'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
