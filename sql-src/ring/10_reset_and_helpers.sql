-- Empty both histories and their texts as readers see them (sample ids go
-- on); returns the time of the reset.  Superusers only unless granted, as
-- pg_stat_statements_reset().
CREATE FUNCTION pgsentinel_reset()
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'pgsentinel_reset'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION pgsentinel_reset() FROM PUBLIC;

-- The statements-history helpers, bound again with every operator and
-- function of pg_catalog qualified: a 2.0.0 installation created or updated
-- with the unqualified script bound whatever the owner of its schema had
-- created there (docs/security.md).  Same text as in the 1.5.1 -> 2.0.0
-- script, so that updated and fresh installations end with the same
-- bodies.  They are replaced, not dropped, because views and functions of
-- users may depend on them; CREATE OR REPLACE in an extension script fails
-- unless the existing function is already a member of this extension, so
-- nothing created by someone else can be taken over here.
CREATE OR REPLACE FUNCTION pg_stat_statements_history_deltas(
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

-- Reads pg_stat_statements_history_deltas(): the deltas per second.
CREATE OR REPLACE FUNCTION pg_stat_statements_history_rates(
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


-- Permissions (docs/security.md).  The two views stay readable by PUBLIC
-- as in 1.4: the C code shows another role's sessions and statements the
-- way pg_stat_activity and pg_stat_statements do.  A view's function calls
-- are checked against the caller, so the functions the views and helpers
-- read stay executable by PUBLIC as well (they return what the views do).
-- The foreign-data wrapper's handler and validator are internal: nobody
-- needs to call them (the planner and CREATE SERVER do not check EXECUTE),
-- and the foreign table, server and wrapper are left without grants (the
-- view reads the table with its owner's rights).
REVOKE ALL ON FUNCTION pgsentinel_fdw_handler() FROM PUBLIC;
REVOKE ALL ON FUNCTION pgsentinel_fdw_validator(text[], oid) FROM PUBLIC;
