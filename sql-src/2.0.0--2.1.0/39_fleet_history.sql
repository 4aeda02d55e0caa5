
-- The history of another server, as the reports read it (docs/fleet.md):
-- every report takes server => a fleet server's name, and then reads the
-- rows the repository holds of it instead of this server's own history.
-- PL/pgSQL, so that the fleet's views (granted to pg_read_all_stats only)
-- are opened only when a report asks for a server: a report of this
-- server's history never touches them, whoever calls it.  The fleet's
-- views are created later (54_fleet_reports.sql); these bodies find them
-- in the extension's schema when they run.

-- The id of the fleet server a report asks for, checked: NULL for this
-- server's own history (server NULL); an error for a caller who may not
-- read the fleet, or a name the repository does not know.
CREATE FUNCTION pgsentinel_fleet_server_id(server text)
RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
    id integer;
BEGIN
    IF server IS NULL THEN
        RETURN NULL;
    END IF;
    IF NOT pg_has_role('pg_read_all_stats', 'USAGE') THEN
        RAISE EXCEPTION 'permission denied to read the history of fleet server "%"', server
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'The repository keeps other servers'' sessions whole: their roles mean nothing here.',
                  HINT = 'Reports on a fleet server are for superusers and members of pg_read_all_stats; leave server out for this server''s own history.';
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT f.server_id FROM %I.pgsentinel_fleet_status f WHERE f.name = $1', s)
        INTO id USING server;
    IF id IS NULL THEN
        RAISE EXCEPTION 'no fleet server named "%" in this repository', server
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM pgsentinel_fleet_status lists them; leave server out for this server''s own history.';
    END IF;
    RETURN id;
END
$$;

-- The rows of a fleet server in [since, until), as pgsentinel_ash_history
-- shows this server's (source 'fleet'; whole rows: the caller may read
-- the fleet).  No server: no rows.  Without JIT: the planner counts ten
-- rows per sample, whatever their number, and the inflated cost makes JIT
-- compile for far longer than a small window takes to read.
CREATE FUNCTION pgsentinel_fleet_rows(server text, since timestamptz,
                                      until timestamptz)
RETURNS SETOF pgsentinel_ash_history
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    s name;
    id integer;
BEGIN
    IF server IS NULL THEN
        RETURN;
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT %I.pgsentinel_fleet_server_id($1)', s)
        INTO id USING server;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT h.ash_time, h.datid, h.datname, h.pid, h.leader_pid, h.usesysid,
               h.usename, h.application_name, h.client_addr, h.client_hostname,
               h.client_port, h.backend_start, h.xact_start, h.query_start,
               h.state_change, h.wait_event_type, h.wait_event, h.state,
               h.backend_xid, h.backend_xmin, h.top_level_query, h.query, h.cmdtype,
               h.queryid, h.nested_queryid, h.backend_type, h.blockers, h.blockerpid,
               h.blocker_state, h.sample_id, h.blocking_pids, h.sample_period,
               h.blocker_usesysid, h.weight, 'fleet'::text, h.blocked_sample
          FROM %I.pgsentinel_fleet_ash h
         WHERE h.server_id = $1 AND h.ash_time >= $2 AND h.ash_time < $3$q$, s)
        USING id, since, until;
END
$$;

-- The samples of a fleet server in [since, until), as
-- pgsentinel_sample_history shows this server's.  No server: none.
CREATE FUNCTION pgsentinel_fleet_samples_in(server text, since timestamptz,
                                            until timestamptz)
RETURNS SETOF pgsentinel_sample_history
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
    id integer;
BEGIN
    IF server IS NULL THEN
        RETURN;
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT %I.pgsentinel_fleet_server_id($1)', s)
        INTO id USING server;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT x.sample_id, x.sample_time, x.sample_period, x.weight,
               x.active_sessions, 'fleet'::text
          FROM %I.pgsentinel_fleet_sample_archive x
         WHERE x.server_id = $1 AND x.sample_time >= $2 AND x.sample_time < $3$q$, s)
        USING id, since, until;
END
$$;

-- The statements history of a fleet server in [since, until], as
-- pg_stat_statements_history_deltas() gives this server's: the intervals
-- between two readings both in the window (the repository keeps those in
-- which a counter moved).  No server: none.
CREATE FUNCTION pgsentinel_fleet_statements_in(server text, since timestamptz,
                                                  until timestamptz)
RETURNS TABLE (queryid bigint, toplevel boolean, reset boolean,
               ash_time timestamptz, prev_ash_time timestamptz,
               calls bigint, rows bigint, exec_ms double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    s name;
    id integer;
BEGIN
    IF server IS NULL THEN
        RETURN;
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT %I.pgsentinel_fleet_server_id($1)', s)
        INTO id USING server;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT d.queryid, d.toplevel, d.reset, d.ash_time, d.prev_ash_time,
               d.calls, d.rows, d.exec_ms
          FROM %I.pgsentinel_fleet_statements d
         WHERE d.server_id = $1 AND d.prev_ash_time >= $2 AND d.ash_time <= $3$q$, s)
        USING id, since, until;
END
$$;
