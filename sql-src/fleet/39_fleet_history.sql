
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
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
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

-- The statement that reads a fleet server's rows in a window, as
-- pgsentinel_ash_history's columns (source 'fleet'): $1 the server id,
-- [$2, $3) the window, %1$I the extension's schema.  What
-- pgsentinel_fleet_ash gives, read in steps the planner cannot reorder:
-- the rows of the window's batches, then the sessions and texts they name
-- (found by key, once each), then the rows joined to those.  Through the
-- view, the planner cannot estimate how many rows a batch's arrays hold,
-- and may join every session to every row.  For the readers that know the server and the window: the
-- reports (pgsentinel_fleet_rows()) and the roll.
--@fragment fleet_rows
WITH u AS MATERIALIZED (
  SELECT b.feed, timezone('UTC', b.first_time)::date AS day, x.*
    FROM %1$I.pgsentinel_fleet_batch b
   CROSS JOIN LATERAL %1$I.pgsentinel_batch_samples(b.sample_data) a
   CROSS JOIN LATERAL %1$I.pgsentinel_batch_rows(b.first_time, a.sample_ids, a.sample_us,
                  a.sample_periods, a.weights, a.sample_blocked, b.row_data) x
   WHERE b.server_id = $1 AND b.first_time >= date_trunc('day', $2, 'UTC')
     AND b.first_time < $3 AND b.last_time >= $2
     AND x.sample_time >= $2 AND x.sample_time < $3),
 ses AS MATERIALIZED (
  SELECT se.feed, se.day, se.session_id, se.datid, se.datname, se.pid,
         se.leader_pid, se.usesysid, se.usename, se.application_name, se.client_addr,
         se.client_hostname, se.client_port, se.backend_start, se.backend_type
    FROM (SELECT DISTINCT u.feed, u.day, u.session_id FROM u) k
    JOIN %1$I.pgsentinel_fleet_session se
      ON se.server_id = $1 AND se.feed = k.feed AND se.day = k.day
     AND se.session_id = k.session_id
   WHERE se.day >= timezone('UTC', $2)::date AND se.day <= timezone('UTC', $3)::date),
 txt AS MATERIALIZED (
  SELECT t.feed, t.day, t.text_id, t.text
    FROM (SELECT DISTINCT u.feed, u.day, x.text_id
            FROM u, LATERAL (VALUES (u.top_level_query_id), (u.query_id)) x(text_id)
           WHERE x.text_id IS NOT NULL) k
    JOIN %1$I.pgsentinel_fleet_text t
      ON t.server_id = $1 AND t.feed = k.feed AND t.day = k.day
     AND t.text_id = k.text_id
   WHERE t.day >= timezone('UTC', $2)::date AND t.day <= timezone('UTC', $3)::date)
SELECT u.sample_time AS ash_time, c.datid, c.datname, c.pid, c.leader_pid, c.usesysid,
       c.usename, c.application_name, c.client_addr, c.client_hostname, c.client_port,
       c.backend_start, u.xact_start, u.query_start, u.state_change, w.wait_event_type,
       w.wait_event, u.state, u.backend_xid, u.backend_xmin,
       %1$I.pgsentinel_text_fill(tt.text, u.top_level_query_values) AS top_level_query,
       %1$I.pgsentinel_text_fill(qt.text, u.query_values) AS query,
       u.cmdtype, u.queryid, u.nested_queryid, c.backend_type,
       coalesce(u.blockers, 0) AS blockers, u.blockerpid, u.blocker_state, u.sample_id,
       coalesce(u.blocking_pids, '{}')::int4[] AS blocking_pids, u.sample_period,
       u.blocker_usesysid, %1$I.pgsentinel_load_weight(u.state, u.sweight) AS weight,
       'fleet'::text AS source, u.blocked_sample, u.lock_type, u.lock_relation,
       u.lock_target, u.lock_mode, u.blocker_lock_modes
  FROM u JOIN ses c
    ON c.feed = u.feed AND c.day = u.day AND c.session_id = u.session_id
  LEFT JOIN txt tt
    ON tt.feed = u.feed AND tt.day = u.day AND tt.text_id = u.top_level_query_id
  LEFT JOIN txt qt
    ON qt.feed = u.feed AND qt.day = u.day AND qt.text_id = u.query_id
  LEFT JOIN %1$I.pgsentinel_fleet_wait_event w
    ON w.server_id = $1 AND w.feed = u.feed AND w.wait_event_id = u.wait_event_id
--@end
CREATE FUNCTION pgsentinel_fleet_rows_sql()
RETURNS text
LANGUAGE sql IMMUTABLE
RETURN $sql$
--@include fleet_rows
$sql$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_rows_sql() FROM PUBLIC;
-- (pgsentinel_fleet_rows() runs it with its caller's rights)
GRANT EXECUTE ON FUNCTION pgsentinel_fleet_rows_sql() TO pg_read_all_stats;

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
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
    q text;
BEGIN
    IF server IS NULL THEN
        RETURN;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
    SELECT @extschema@.pgsentinel_fleet_rows_sql() INTO q;
    RETURN QUERY EXECUTE pg_catalog.format(q, s) USING id, since, until;
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
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
BEGIN
    IF server IS NULL THEN
        RETURN;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT x.sample_id, x.sample_time, x.sample_period, x.weight,
               x.active_sessions, 'fleet'::text
          FROM %I.pgsentinel_fleet_sample_archive x
         WHERE x.server_id = $1 AND x.sample_time >= $2 AND x.sample_time < $3
           AND x.batch_start >= date_trunc('day', $2, 'UTC') AND x.batch_start < $3
           AND x.batch_end >= $2$q$, s)
        USING id, since, until;
END
$$;

-- The statements history of a fleet server in [since, until], as
-- pg_stat_statements_history_deltas() gives this server's: the intervals
-- between two readings both in the window (the repository keeps those in
-- which a counter moved), or with overlapping, every reading in
-- (since, until] whatever its interval's start (for
-- pgsentinel_statement_calls_in(), which counts the part of each interval
-- in a window); as pgsentinel_fleet_statements shows them but read from
-- the deltas alone: that view's joins to the texts are not provably
-- removable, and a node's texts would all be fetched at each call.  No
-- server: none.
CREATE FUNCTION pgsentinel_fleet_statements_in(server text, since timestamptz,
                                                  until timestamptz,
                                                  overlapping boolean DEFAULT false)
RETURNS TABLE (queryid bigint, toplevel boolean, reset boolean,
               ash_time timestamptz, prev_ash_time timestamptz,
               calls bigint, rows bigint, exec_ms double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
BEGIN
    IF server IS NULL THEN
        RETURN;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT d.queryid, d.toplevel, d.reset, d.ash_time, d.prev_ash_time,
               CASE WHEN NOT d.reset THEN coalesce(d.calls, 0) END,
               CASE WHEN NOT d.reset THEN coalesce(d.rows, 0) END,
               CASE WHEN NOT d.reset THEN coalesce(d.exec_ms, 0) END
          FROM %I.pgsentinel_fleet_statement_delta d
         WHERE d.server_id = $1 AND d.ash_time <= $3
           AND CASE WHEN $4 THEN d.ash_time > $2 ELSE d.prev_ash_time >= $2 END
           AND d.batch_start >= pg_catalog.date_trunc('day', $2, 'UTC')
           AND d.batch_start <= $3 AND d.batch_end >= $2$q$, s)
        USING id, since, until, overlapping;
END
$$;

-- The latest text the repository keeps of a fleet server's statement
-- (top-level query id queryid) in its statements history, in the days of
-- [since, until]: what pgsentinel_top_calls() shows of a statement no
-- sample saw.  Read from that server's tables alone (another node's may
-- be down).  No server: NULL.
CREATE FUNCTION pgsentinel_fleet_statement_history_text(server text, queryid bigint,
                                                        since timestamptz, until timestamptz)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
    t text;
BEGIN
    IF server IS NULL THEN
        RETURN NULL;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
    EXECUTE pg_catalog.format($q$
        SELECT x.text
          FROM %1$I.pgsentinel_fleet_statement_text m
          JOIN %1$I.pgsentinel_fleet_text x
            ON x.server_id = m.server_id AND x.feed = m.feed AND x.day = m.day
           AND x.text_id = m.text_id
         WHERE m.server_id = $1 AND m.queryid = $2
           AND m.day >= timezone('UTC', $3)::date AND m.day <= timezone('UTC', $4)::date
         ORDER BY m.day DESC
         LIMIT 1$q$, s)
        INTO t USING id, queryid, since, until;
    RETURN t;
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
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
    r timestamptz;
BEGIN
    IF server IS NULL THEN
        RETURN NULL;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
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
-- grows past jit_above_cost, and compiling it takes far longer than the
-- report reads.
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
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
BEGIN
    IF server IS NULL OR kind NOT IN ('hour', 'minute') THEN
        RETURN;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
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
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
BEGIN
    IF server IS NULL OR kind NOT IN ('hour', 'minute') THEN
        RETURN;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
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
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
BEGIN
    IF server IS NULL OR kind NOT IN ('hour', 'minute') THEN
        RETURN;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT x.bucket, x.kind, x.root_pid, x.pid, x.key_usesysid, x.depth,
               x.blocked_by, x.samples, x.db_time, x.last_time, x.usesysid, x.usename,
               x.state, x.wait_event_type, x.wait_event, x.query, x.first_time,
               x.application_name, x.client_addr, x.xact_start, x.lock, x.lock_mode,
               x.blocker_lock_modes
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
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    id integer;
    t text;
BEGIN
    IF server IS NULL THEN
        RETURN NULL;
    END IF;
    id := @extschema@.pgsentinel_fleet_server_id(server);
    EXECUTE pg_catalog.format($q$
        SELECT a.top_level_query FROM %I.pgsentinel_fleet_activity_archive a
         WHERE a.server_id = $1 AND a.queryid = $2
           AND a.day >= timezone('UTC', $3)::date AND a.day <= timezone('UTC', $4)::date
           AND a.batch_start >= date_trunc('day', $3, 'UTC') AND a.batch_start < $4
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
