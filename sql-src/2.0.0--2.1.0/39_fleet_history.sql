
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

-- Where a fleet server's rollups end (pgsentinel_fleet_roll()): its
-- reports read the whole minutes and hours before it from the rollups,
-- the rest from its rows ('-infinity': none yet).  No server: NULL.
CREATE FUNCTION pgsentinel_fleet_rolled_until(server text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
    id integer;
    r timestamptz;
BEGIN
    IF server IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT %I.pgsentinel_fleet_server_id($1)', s)
        INTO id USING server;
    EXECUTE pg_catalog.format('SELECT f.rolled_until FROM %I.pgsentinel_fleet_status f
                                WHERE f.server_id = $1', s)
        INTO r USING id;
    RETURN coalesce(r, '-infinity');
END
$$;

-- A fleet server's load rollups of [lo, hi): kind 'hour' or 'minute', per
-- session (sessions) or not, with the columns pgsentinel_load() reads from
-- this server's rollups (whole: the caller may read the fleet).  No
-- server: none.  The readers of the rollups say how many rows a piece of a
-- window has about (ROWS): at the default thousand, a report's estimate
-- grew past jit_above_cost, and compiling it took 1 to 12 s for a query
-- of 20 ms (the blocking trees of an hour).
CREATE FUNCTION pgsentinel_fleet_load_in(server text, kind text, lo timestamptz,
                                         hi timestamptz, sessions boolean)
RETURNS TABLE (bucket timestamptz, last_time timestamptz, datname text,
               usename text, application_name text, client_addr text,
               pid integer, backend_type text, wait_event_type text,
               wait_event text, queryid bigint, db_time double precision)
LANGUAGE plpgsql STABLE
ROWS 100
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
    id integer;
BEGIN
    IF server IS NULL OR kind NOT IN ('hour', 'minute') THEN
        RETURN;
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT %I.pgsentinel_fleet_server_id($1)', s)
        INTO id USING server;
    IF sessions THEN
        RETURN QUERY EXECUTE pg_catalog.format($q$
            SELECT x.bucket, x.last_time, x.datname, x.usename, x.application_name,
                   x.client_addr, x.pid, x.backend_type, x.wait_event_type,
                   x.wait_event, NULL::int8, x.db_time
              FROM %I.%I x
             WHERE x.server_id = $1 AND x.bucket >= $2 AND x.bucket < $3$q$,
            s, 'pgsentinel_fleet_rollup_session_' || kind)
            USING id, lo, hi;
    ELSE
        RETURN QUERY EXECUTE pg_catalog.format($q$
            SELECT x.bucket, NULL::timestamptz, x.datname, x.usename, x.application_name,
                   NULL::text, NULL::int4, x.backend_type, x.wait_event_type,
                   x.wait_event, x.queryid, x.db_time
              FROM %I.%I x
             WHERE x.server_id = $1 AND x.bucket >= $2 AND x.bucket < $3$q$,
            s, 'pgsentinel_fleet_rollup_' || kind)
            USING id, lo, hi;
    END IF;
END
$$;

-- A fleet server's time observed in the rollups of [lo, hi), kind 'hour'
-- or 'minute', as pgsentinel_observed() reads this server's.  No server:
-- none.
CREATE FUNCTION pgsentinel_fleet_observed_in(server text, kind text, lo timestamptz,
                                             hi timestamptz)
RETURNS TABLE (bucket timestamptz, samples bigint, observed double precision,
               peak integer)
LANGUAGE plpgsql STABLE
ROWS 60
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
    id integer;
BEGIN
    IF server IS NULL OR kind NOT IN ('hour', 'minute') THEN
        RETURN;
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT %I.pgsentinel_fleet_server_id($1)', s)
        INTO id USING server;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT x.bucket, x.samples, x.observed, x.peak
          FROM %I.%I x
         WHERE x.server_id = $1 AND x.bucket >= $2 AND x.bucket < $3$q$,
        s, 'pgsentinel_fleet_rollup_' || kind || '_observed')
        USING id, lo, hi;
END
$$;

-- A fleet server's blocking parts in the rollups of [lo, hi), kind 'hour'
-- or 'minute', as pgsentinel_blocking_trees() reads this server's (whole).
-- No server: none.
CREATE FUNCTION pgsentinel_fleet_blocking_in(server text, kind text, lo timestamptz,
                                             hi timestamptz)
RETURNS SETOF pgsentinel_rollup_blocking_hour
LANGUAGE plpgsql STABLE
ROWS 20
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
    id integer;
BEGIN
    IF server IS NULL OR kind NOT IN ('hour', 'minute') THEN
        RETURN;
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT %I.pgsentinel_fleet_server_id($1)', s)
        INTO id USING server;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT x.bucket, x.kind, x.root_pid, x.pid, x.key_usesysid, x.depth,
               x.blocked_by, x.samples, x.db_time, x.last_time, x.usesysid, x.usename,
               x.state, x.wait_event_type, x.wait_event, x.query, x.first_time,
               x.application_name, x.client_addr, x.xact_start
          FROM %I.%I x
         WHERE x.server_id = $1 AND x.bucket >= $2 AND x.bucket < $3$q$,
        s, 'pgsentinel_fleet_rollup_blocking_' || kind)
        USING id, lo, hi;
END
$$;

-- The latest text the repository keeps of a fleet server's statement
-- (top-level query id queryid) in the days of [since, until), started
-- before until, of the database, role and application asked for: what
-- pgsentinel_top() shows of a statement it read from rollups only, as
-- pgsentinel_activity_archive gives this server's.  No server: NULL.
CREATE FUNCTION pgsentinel_fleet_statement_text(server text, queryid bigint,
                                                since timestamptz, until timestamptz,
                                                dbname text, username text,
                                                application text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
    id integer;
    t text;
BEGIN
    IF server IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
    EXECUTE pg_catalog.format('SELECT %I.pgsentinel_fleet_server_id($1)', s)
        INTO id USING server;
    EXECUTE pg_catalog.format($q$
        SELECT a.top_level_query FROM %I.pgsentinel_fleet_activity_archive a
         WHERE a.server_id = $1 AND a.queryid = $2
           AND a.day >= timezone('UTC', $3)::date AND a.day <= timezone('UTC', $4)::date
           AND (a.query_start IS NULL OR a.query_start < $4)
           AND ($5 IS NULL OR a.datname = $5)
           AND ($6 IS NULL OR a.usename = $6)
           AND ($7 IS NULL OR a.application_name = $7)
         ORDER BY a.day DESC, a.query_start DESC NULLS LAST, a.activity_id DESC
         LIMIT 1$q$, s)
        INTO t USING id, queryid, since, until, dbname, username, application;
    RETURN t;
END
$$;
