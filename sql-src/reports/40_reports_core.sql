
-- Reports (docs/reports.md): one function per classic ASH question, over
-- pgsentinel_ash_history and pgsentinel_sample_history (the ring and the
-- archive), weight-aware.  Every function takes a window [since, until)
-- that defaults to the last hour, and the same filters, NULL meaning "any".
-- Average active sessions (aas) is the DB time of the rows (sum of their
-- weights) over the seconds observed (sum of the samples' weights), and
-- coverage the seconds observed over the seconds of the window: a window
-- the sampler did not see has no aas (NULL), not an aas of 0.
--
-- The functions are SQL-standard bodies, bound when created, with every
-- operator and function qualified (docs/security.md); they read the
-- history views, which apply pg_stat_activity's visibility, so they are
-- for PUBLIC and run with the caller's rights.
--
-- pgsentinel_report() and pgsentinel_incidents() run without JIT (SET jit
-- = off): their plans count the rows of functions and views they cannot
-- see into, and the inflated cost makes JIT compile for far longer than
-- they read.  The others stay without a SET clause, which would keep them
-- from being inlined into their callers' plans, where they are planned
-- with their arguments as constants (and a constant argument is checked
-- when planned, the same way on every version).

-- A text (a statement, a session's description) as one line of at most
-- width characters for the text report: runs of white space made one
-- space, control characters shown as '?', and a text too long cut after
-- its last whole word that fits, followed by ' ...' (a single word longer
-- than that is cut where it must).  NULL for NULL.
CREATE FUNCTION pgsentinel_text_line(t text, width integer)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT CASE WHEN pg_catalog.length(c.line) OPERATOR(pg_catalog.<=) width THEN c.line
                    ELSE pg_catalog.left(pg_catalog.regexp_replace(
                             pg_catalog.left(c.line, width OPERATOR(pg_catalog.-) 3),
                             '\s+\S*$', ''), width OPERATOR(pg_catalog.-) 4)
                         OPERATOR(pg_catalog.||) ' ...' END
          FROM (SELECT pg_catalog.regexp_replace(
                           pg_catalog.regexp_replace(pg_catalog.btrim(t), '\s+', ' ', 'g'),
                           '[[:cntrl:]]', '?', 'g')) AS c(line));

-- The share of the interval (start, stop] that lies in the window
-- [since, until): 0 to 1; NULL for an empty or unknown interval.  A
-- statement's delta is spread evenly over its interval: its part in a
-- window is the delta times this share (pgsentinel_top_statements()).
CREATE FUNCTION pgsentinel_window_share(since timestamptz, until timestamptz,
                                        start timestamptz, stop timestamptz)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN stop OPERATOR(pg_catalog.>) start
            THEN greatest(0::pg_catalog.float8,
                     pg_catalog.date_part('epoch'::pg_catalog.text,
                         least(stop, until) OPERATOR(pg_catalog.-)
                         greatest(start, since)))
                 OPERATOR(pg_catalog./)
                 pg_catalog.date_part('epoch'::pg_catalog.text, stop OPERATOR(pg_catalog.-) start)
       END;

-- The window's length in seconds; a NULL or empty window is an error.
-- Immutable (it depends on its arguments only), so that a constant window
-- is checked when planned.
CREATE FUNCTION pgsentinel_window_seconds(since timestamptz, until timestamptz)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF since IS NULL OR until IS NULL THEN
        RAISE EXCEPTION 'the report window needs both ends: since and until may not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Leave since and until out for the last hour, or give both, e.g. since => now() - interval ''15 minutes'', until => now().';
    END IF;
    IF until <= since THEN
        RAISE EXCEPTION 'the report window is empty: since (%) is not before until (%)', since, until
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'since is the start of the window and until its end: swap them.';
    END IF;
    RETURN extract(epoch FROM until - since)::double precision;
END
$$;

-- The name of a dimension, checked: an unknown one is an error that lists
-- the known ones.  NULL is allowed (no split).
CREATE FUNCTION pgsentinel_dimension(dimension text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF dimension IS NULL OR dimension IN ('wait_class', 'wait_event', 'statement',
            'session', 'session_group', 'database', 'role', 'application', 'client',
            'backend_type') THEN
        RETURN dimension;
    END IF;
    RAISE EXCEPTION 'unknown dimension "%"', dimension
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Use one of wait_class, wait_event, statement, session, session_group, database, role, application, client, backend_type.';
END
$$;

-- The checks every report makes of its arguments beyond their types: a
-- count of rows to show and a CPU count must be positive, and a chart's
-- width from 31 to 1000 columns (a bar of 10 after the time and the load,
-- up to what a screen shows: a line is built whole, and one of a width of
-- millions took seconds and gigabytes without heeding statement_timeout)
-- (errors; NULL: not given).  A window in the
-- future or a filter naming a database, role or wait class that does not
-- exist here (unless the report is of a fleet server), or an application
-- that no row of the window has, draws a NOTICE with a hint, since it can
-- only show nothing (or a dropped one's rows).  A
-- report calls others: each NOTICE is given once per statement.  Returns
-- true (for a WHERE clause).
CREATE FUNCTION pgsentinel_check_request(since timestamptz, until timestamptz,
                                         n integer, cpus integer, dbname text,
                                         username text, wait_class text, server text,
                                         application text DEFAULT NULL,
                                         width integer DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
    hint text;
    said text := current_setting('pgsentinel_internal.notices_said', true);
    stmt text := statement_timestamp()::text;
    sch constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    app_seen boolean := true;
    app_key text;
BEGIN
    IF n IS NOT NULL AND n < 1 THEN
        RAISE EXCEPTION 'n must be 1 or more, not %', n
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'n is how many rows to show, e.g. n => 10.';
    END IF;
    IF cpus IS NOT NULL AND cpus < 1 THEN
        RAISE EXCEPTION 'cpus must be 1 or more, not %', cpus
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'cpus is where the chart draws the CPU line; leave it out for the count pgsentinel detects (or pgsentinel_report.cpus).';
    END IF;
    IF width IS NOT NULL AND (width < 31 OR width > 1000) THEN
        RAISE EXCEPTION 'width must be between 31 and 1000, not %', width
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'width is the columns the chart fits in, e.g. width => 80: 31 draws bars of 10 columns, 1000 the widest.';
    END IF;
    IF said IS NULL OR split_part(said, '|', 1) <> stmt THEN
        said := stmt;
    END IF;
    IF application IS NOT NULL AND until > since THEN
        -- once per statement and window (a report calls several reports);
        -- the first matching row ends the scan
        app_key := 'app' || md5(concat_ws('|', application, since, until, server));
        IF position('|' || app_key IN said) = 0 THEN
            EXECUTE format('SELECT EXISTS (SELECT FROM %I.pgsentinel_ash($1, $2, application => $3, server => $4))', sch)
                INTO app_seen USING since, until, application, server;
            said := said || '|' || app_key;
        END IF;
    END IF;
    FOR msg, hint IN
        SELECT m, h FROM (VALUES
            (CASE WHEN since >= now() THEN
                 'the window begins in the future: no sample can be there yet' END,
             'since and until are times of this server: no sample is later than now().'),
            (CASE WHEN dbname IS NOT NULL AND server IS NULL
                       AND NOT EXISTS (SELECT FROM pg_database d WHERE d.datname = dbname) THEN
                 format('no database is named "%s": only rows of a dropped one can match', dbname) END,
             'Database names are case-sensitive: see SELECT datname FROM pg_database.'),
            (CASE WHEN username IS NOT NULL AND server IS NULL
                       AND NOT EXISTS (SELECT FROM pg_roles r WHERE r.rolname = username) THEN
                 format('no role is named "%s": only rows of a dropped one can match', username) END,
             'Role names are case-sensitive: see SELECT rolname FROM pg_roles.'),
            (CASE WHEN wait_class IS NOT NULL
                       AND wait_class NOT IN ('CPU', 'Activity', 'BufferPin', 'Client', 'Extension',
                                              'InjectionPoint', 'IO', 'IPC', 'Lock', 'LWLock', 'Timeout') THEN
                 format('"%s" is not a wait class: no row can match', wait_class) END,
             'Use one of CPU, Activity, BufferPin, Client, Extension, IO, IPC, Lock, LWLock, Timeout (case-sensitive).'),
            (CASE WHEN NOT app_seen THEN
                 format('no row of the window has application "%s"', application) END,
             'Application names are case-sensitive: see SELECT DISTINCT application_name FROM pgsentinel_ash(since, until).')
        ) AS v(m, h)
        WHERE m IS NOT NULL
    LOOP
        IF position('|' || md5(msg) IN said) = 0 THEN
            RAISE NOTICE '%', msg USING HINT = hint;
            said := said || '|' || md5(msg);
        END IF;
    END LOOP;
    PERFORM set_config('pgsentinel_internal.notices_said', said, false);
    RETURN true;
END
$$;

-- The value of a row for a dimension: wait_event is "class:event" except
-- for CPU, statement the query id, session the pid, session_group
-- "role@database application from client" (the sessions of one origin,
-- however often they reconnect).  Immutable throughout
-- (no concat(), which is only stable), so that it is inlined in the
-- queries that call it for every row.
CREATE FUNCTION pgsentinel_dimension_key(
    dimension text, wait_event_type text, wait_event text, queryid bigint,
    pid integer, datname text, usename text, application_name text,
    client_addr text, backend_type text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT CASE
    WHEN dimension OPERATOR(pg_catalog.=) 'wait_class' THEN wait_event_type
    WHEN dimension OPERATOR(pg_catalog.=) 'wait_event' THEN
        CASE WHEN wait_event_type OPERATOR(pg_catalog.=) 'CPU' THEN 'CPU'
             WHEN wait_event_type IS NULL THEN NULL
             ELSE wait_event_type OPERATOR(pg_catalog.||) ':'
                  OPERATOR(pg_catalog.||) coalesce(wait_event, '') END
    WHEN dimension OPERATOR(pg_catalog.=) 'statement' THEN queryid::pg_catalog.text
    WHEN dimension OPERATOR(pg_catalog.=) 'session' THEN pid::pg_catalog.text
    WHEN dimension OPERATOR(pg_catalog.=) 'session_group' THEN
        coalesce(usename, '?') OPERATOR(pg_catalog.||) '@'
        OPERATOR(pg_catalog.||) coalesce(datname, '?') OPERATOR(pg_catalog.||) ' '
        OPERATOR(pg_catalog.||) coalesce(NULLIF(application_name, ''::pg_catalog.text), '-')
        OPERATOR(pg_catalog.||) ' from ' OPERATOR(pg_catalog.||) coalesce(client_addr, 'local or hidden')
    WHEN dimension OPERATOR(pg_catalog.=) 'database' THEN datname
    WHEN dimension OPERATOR(pg_catalog.=) 'role' THEN usename
    WHEN dimension OPERATOR(pg_catalog.=) 'application' THEN application_name
    WHEN dimension OPERATOR(pg_catalog.=) 'client' THEN client_addr
    WHEN dimension OPERATOR(pg_catalog.=) 'backend_type' THEN backend_type
END;
END;

-- The bucket of a time series when none is given: the shortest of the
-- usual steps that cuts the window into at most n buckets.
CREATE FUNCTION pgsentinel_auto_bucket(since timestamptz, until timestamptz,
                                       n integer DEFAULT 60)
RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT coalesce(
    (SELECT s.step
       FROM pg_catalog.unnest(ARRAY['1 second', '2 seconds', '5 seconds',
                '10 seconds', '15 seconds', '30 seconds', '1 minute',
                '2 minutes', '5 minutes', '10 minutes', '15 minutes',
                '30 minutes', '1 hour', '2 hours', '3 hours', '6 hours',
                '12 hours', '1 day']::pg_catalog.interval[]) AS s(step)
      WHERE (until OPERATOR(pg_catalog.-) since) OPERATOR(pg_catalog.<=)
            (s.step OPERATOR(pg_catalog.*) greatest(n, 1)::pg_catalog.float8)
      ORDER BY s.step
      LIMIT 1),
    pg_catalog.make_interval(days => pg_catalog.ceil(
        extract(epoch FROM until OPERATOR(pg_catalog.-) since)
        OPERATOR(pg_catalog./) 86400.0
        OPERATOR(pg_catalog./) greatest(n, 1))::pg_catalog.int4));
END;

-- The bucket given to a series, checked (NULL: none given).
-- At most 100000 buckets: a series is computed and returned whole, and
-- one of ten years at one second would not end.
CREATE FUNCTION pgsentinel_series_bucket(since timestamptz, until timestamptz,
                                         bucket interval)
RETURNS interval
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF bucket IS NULL THEN
        RETURN NULL;
    END IF;
    IF bucket <= interval '0' THEN
        RAISE EXCEPTION 'the bucket of a series must be positive, not %', bucket
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Give e.g. bucket => ''1 minute'', or leave it out for an automatic one.';
    END IF;
    IF extract(epoch FROM until - since) / extract(epoch FROM bucket) > 100000 THEN
        RAISE EXCEPTION 'a bucket of % cuts this window into more than 100000 buckets', bucket
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Give a longer bucket or a shorter window, or leave bucket out for an automatic one.';
    END IF;
    RETURN bucket;
END
$$;

-- The buckets of a series: each bucket's start (origin plus a whole number
-- of steps) and the seconds of [since, until) it covers (the first and the
-- last may be cut by the window).
CREATE FUNCTION pgsentinel_buckets(since timestamptz, until timestamptz,
                                   step interval, origin timestamptz)
RETURNS TABLE (bucket_start timestamptz, secs double precision)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT g.b,
       extract(epoch FROM least(g.b OPERATOR(pg_catalog.+) step, until)
               OPERATOR(pg_catalog.-) greatest(g.b, since))::pg_catalog.float8
  FROM pg_catalog.generate_series(pg_catalog.date_bin(step, since, origin),
                                  until OPERATOR(pg_catalog.-) interval '1 microsecond',
                                  step) AS g(b);
END;

-- The rows of the history in a window, filtered: the base of every report.
-- server: a fleet server of this repository (its rows in the repository),
-- or NULL: this server's own history.
CREATE FUNCTION pgsentinel_ash(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS SETOF pgsentinel_ash_history
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT h.ash_time, h.datid, h.datname, h.pid, h.leader_pid, h.usesysid,
       h.usename, h.application_name, h.client_addr, h.client_hostname,
       h.client_port, h.backend_start, h.xact_start, h.query_start,
       h.state_change, h.wait_event_type, h.wait_event, h.state,
       h.backend_xid, h.backend_xmin, h.top_level_query, h.query, h.cmdtype,
       h.queryid, h.nested_queryid, h.backend_type, h.blockers, h.blockerpid,
       h.blocker_state, h.sample_id, h.blocking_pids, h.sample_period,
       h.blocker_usesysid, h.weight, h.source, h.blocked_sample, h.lock_type,
       h.lock_relation, h.lock_target, h.lock_mode, h.blocker_lock_modes
  FROM (SELECT x.* FROM pgsentinel_history_rows_by_batch x WHERE server IS NULL
        UNION ALL
        SELECT f.ash_time, f.ash_time, f.* FROM pgsentinel_fleet_rows(server, since, until) f
         WHERE server IS NOT NULL) h
 WHERE pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
   AND h.ash_time OPERATOR(pg_catalog.>=) since
   AND h.ash_time OPERATOR(pg_catalog.<) until
   -- the archive's batches of the window (pgsentinel_archive_samples_by_batch)
   AND h.batch_start OPERATOR(pg_catalog.>=) pg_catalog.date_trunc('day', since, 'UTC')
   AND h.batch_start OPERATOR(pg_catalog.<) until
   AND h.batch_end OPERATOR(pg_catalog.>=) since
   AND (dbname IS NULL OR h.datname OPERATOR(pg_catalog.=) dbname)
   AND (username IS NULL OR h.usename OPERATOR(pg_catalog.=) username)
   AND (application IS NULL OR h.application_name OPERATOR(pg_catalog.=) application)
   AND (client IS NULL OR h.client_addr OPERATOR(pg_catalog.=) client)
   AND (backend IS NULL OR h.backend_type OPERATOR(pg_catalog.=) backend)
   AND (query_id IS NULL OR h.queryid OPERATOR(pg_catalog.=) query_id)
   AND (wait_class IS NULL OR h.wait_event_type OPERATOR(pg_catalog.=) wait_class)
   AND (event IS NULL OR h.wait_event OPERATOR(pg_catalog.=) event)
   AND (session_pid IS NULL OR h.pid OPERATOR(pg_catalog.=) session_pid);
END;

-- The samples of a window, those that found no active session included;
-- server as for pgsentinel_ash().
CREATE FUNCTION pgsentinel_samples_in(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    server text DEFAULT NULL)
RETURNS SETOF pgsentinel_sample_history
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT s.sample_id, s.sample_time, s.sample_period, s.weight,
       s.active_sessions, s.source
  FROM (SELECT x.* FROM pgsentinel_history_samples_by_batch x WHERE server IS NULL
        UNION ALL
        SELECT f.sample_time, f.sample_time, f.*
          FROM pgsentinel_fleet_samples_in(server, since, until) f
         WHERE server IS NOT NULL) s
 WHERE pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
   AND s.sample_time OPERATOR(pg_catalog.>=) since
   AND s.sample_time OPERATOR(pg_catalog.<) until
   AND s.batch_start OPERATOR(pg_catalog.>=) pg_catalog.date_trunc('day', since, 'UTC')
   AND s.batch_start OPERATOR(pg_catalog.<) until
   AND s.batch_end OPERATOR(pg_catalog.>=) since;
END;

-- How a window is read (docs/reports.md): its whole hours, then whole
-- minutes (UTC), before the history's split point and the end of the
-- rollups (pgsentinel_history_split; of a fleet server, server, the end
-- of its rollups in the repository) from the rollups
-- (kind 'hour', 'minute'), the rest from rows ('raw'): the edges, and the
-- ring.  grain: the rollups a caller may read: 'hour' (hours and
-- minutes), 'minute' or NULL (rows only).  pgsentinel_report.rollups =
-- off reads rows only.
CREATE FUNCTION pgsentinel_window_pieces(since timestamptz, until timestamptz,
                                         grain text, server text DEFAULT NULL)
RETURNS TABLE (kind text, lo timestamptz, hi timestamptz)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH e AS (
    SELECT CASE WHEN server IS NULL
                THEN least(until, (SELECT x.split_time FROM pgsentinel_history_split x),
                           (SELECT x.rollup_until FROM pgsentinel_history_split x))
                ELSE least(until, pgsentinel_fleet_rolled_until(server)) END AS e,
           grain IS NOT NULL
           AND coalesce(pg_catalog.current_setting('pgsentinel_report.rollups', true), '')
               OPERATOR(pg_catalog.<>) 'off' AS ok
     WHERE pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
), m AS (
    SELECT e.ok,
           CASE WHEN pg_catalog.date_trunc('minute', since, 'UTC') OPERATOR(pg_catalog.=) since
                THEN since
                ELSE pg_catalog.date_trunc('minute', since, 'UTC') OPERATOR(pg_catalog.+) interval '1 minute'
           END AS m0,
           pg_catalog.date_trunc('minute', e.e, 'UTC') AS m1
      FROM e
), q AS (
    SELECT m.m0, m.m1,
           m.ok AND m.m1 OPERATOR(pg_catalog.>) m.m0 AS ok,
           CASE WHEN pg_catalog.date_trunc('hour', m.m0, 'UTC') OPERATOR(pg_catalog.=) m.m0
                THEN m.m0
                ELSE pg_catalog.date_trunc('hour', m.m0, 'UTC') OPERATOR(pg_catalog.+) interval '1 hour'
           END AS h0,
           pg_catalog.date_trunc('hour', m.m1, 'UTC') AS h1
      FROM m
), h AS (
    SELECT q.m0, q.m1, q.ok, q.h0, q.h1,
           q.ok AND grain OPERATOR(pg_catalog.=) 'hour'
           AND q.h1 OPERATOR(pg_catalog.>) q.h0 AS hourly
      FROM q
)
SELECT v.kind, v.lo, v.hi
  FROM h CROSS JOIN LATERAL (VALUES
        (1, 'raw', since, CASE WHEN h.ok THEN h.m0 ELSE until END, true),
        (2, 'minute', h.m0, CASE WHEN h.hourly THEN h.h0 ELSE h.m1 END, h.ok),
        (3, 'hour', h.h0, h.h1, h.hourly),
        (4, 'minute', h.h1, h.m1, h.hourly),
        (5, 'raw', h.m1, until, h.ok)) AS v(n, kind, lo, hi, used)
 WHERE v.used AND v.lo OPERATOR(pg_catalog.<) v.hi
 ORDER BY v.n;
END;

-- Whether a backend type is one of pgsentinel's own workers (the
-- archiver, which also runs the fleet's tick, and the statements worker:
-- src/archive/archiver.c, src/statements/pgssh_request.c).  The reports leave their time out
-- of the load unless a backend filter asks for it, and show it apart.  A
-- row whose backend type the reader may not see is counted as load.
CREATE FUNCTION pgsentinel_own_worker(backend_type text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT coalesce(backend_type OPERATOR(pg_catalog.=) 'pgsentinel archiver'
                OR backend_type OPERATOR(pg_catalog.=) 'pgsentinel statements', false);
END;

-- The DB time of a window, filtered, as the rollups keep it: one row per
-- rollup row of the window's whole buckets (t: the bucket) and per row of
-- the rest (t: its time).  by: the dimension the caller splits by, which
-- says what the rows must show: a session or a client (by, or a filter on
-- them) only the sessions' rollups show, a statement (by, or a filter on
-- it) only the others.  grain: the finest bucket the caller
-- groups by is whole hours ('hour') or minutes ('minute'), or NULL: rows
-- only.  last_time: the latest time the row stands for (a rollup of
-- statements does not say: NULL); query: the top-level statement (rows
-- only).  The sums equal those of pgsentinel_ash() over the window, less
-- the rows that are not load: of idle sessions (weight 0) and, unless
-- backend asks for them, of pgsentinel's own workers.  server: a fleet
-- server's rollups and rows in the repository.
CREATE FUNCTION pgsentinel_load(
    since timestamptz, until timestamptz, grain text, by text,
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS TABLE (
    t timestamptz,
    last_time timestamptz,
    datname text,
    usename text,
    application_name text,
    client_addr text,
    pid integer,
    backend_type text,
    wait_event_type text,
    wait_event text,
    queryid bigint,
    query text,
    db_time double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH s AS (
    SELECT coalesce(by OPERATOR(pg_catalog.=) 'session' OR by OPERATOR(pg_catalog.=) 'client'
                    OR by OPERATOR(pg_catalog.=) 'session_group'
                    OR client IS NOT NULL OR session_pid IS NOT NULL, false) AS sessions
), g AS (
    SELECT s.sessions,
           CASE WHEN s.sessions AND (query_id IS NOT NULL
                                     OR by IS NOT DISTINCT FROM 'statement') THEN NULL
                ELSE grain END AS grain
      FROM s
), pc AS MATERIALIZED (
    SELECT p.kind, p.lo, p.hi, g.sessions
      FROM g, pgsentinel_window_pieces(since, until, g.grain, server) p
)
-- the rollups' pieces: by hour or minute, per session when asked
SELECT r.bucket, r.last_time, r.datname, r.usename, r.application_name,
       r.client_addr, r.pid, r.backend_type, r.wait_event_type, r.wait_event,
       r.queryid, NULL, r.db_time
  FROM pc CROSS JOIN LATERAL (
       SELECT x.bucket, NULL::pg_catalog.timestamptz AS last_time, x.datname,
              x.usename, x.application_name, NULL::pg_catalog.text AS client_addr,
              NULL::pg_catalog.int4 AS pid, x.backend_type, x.wait_event_type,
              x.wait_event, x.queryid, x.db_time
         FROM pgsentinel_ash_hour x
        WHERE server IS NULL AND pc.kind OPERATOR(pg_catalog.=) 'hour' AND NOT pc.sessions
          AND x.bucket OPERATOR(pg_catalog.>=) pc.lo AND x.bucket OPERATOR(pg_catalog.<) pc.hi
       UNION ALL
       SELECT x.bucket, NULL, x.datname, x.usename, x.application_name, NULL,
              NULL, x.backend_type, x.wait_event_type, x.wait_event, x.queryid,
              x.db_time
         FROM pgsentinel_ash_minute x
        WHERE server IS NULL AND pc.kind OPERATOR(pg_catalog.=) 'minute' AND NOT pc.sessions
          AND x.bucket OPERATOR(pg_catalog.>=) pc.lo AND x.bucket OPERATOR(pg_catalog.<) pc.hi
       UNION ALL
       SELECT x.bucket, x.last_time, x.datname, x.usename, x.application_name,
              x.client_addr, x.pid, x.backend_type, x.wait_event_type,
              x.wait_event, NULL, x.db_time
         FROM pgsentinel_ash_session_hour x
        WHERE server IS NULL AND pc.kind OPERATOR(pg_catalog.=) 'hour' AND pc.sessions
          AND x.bucket OPERATOR(pg_catalog.>=) pc.lo AND x.bucket OPERATOR(pg_catalog.<) pc.hi
       UNION ALL
       SELECT x.bucket, x.last_time, x.datname, x.usename, x.application_name,
              x.client_addr, x.pid, x.backend_type, x.wait_event_type,
              x.wait_event, NULL, x.db_time
         FROM pgsentinel_ash_session_minute x
        WHERE server IS NULL AND pc.kind OPERATOR(pg_catalog.=) 'minute' AND pc.sessions
          AND x.bucket OPERATOR(pg_catalog.>=) pc.lo AND x.bucket OPERATOR(pg_catalog.<) pc.hi
       UNION ALL
       SELECT x.bucket, x.last_time, x.datname, x.usename, x.application_name,
              x.client_addr, x.pid, x.backend_type, x.wait_event_type,
              x.wait_event, x.queryid, x.db_time
         FROM pgsentinel_fleet_load_in(server, pc.kind, pc.lo, pc.hi, pc.sessions) x
        WHERE server IS NOT NULL
       OFFSET 0) r
 WHERE (dbname IS NULL OR r.datname OPERATOR(pg_catalog.=) dbname)
   AND (username IS NULL OR r.usename OPERATOR(pg_catalog.=) username)
   AND (application IS NULL OR r.application_name OPERATOR(pg_catalog.=) application)
   AND (client IS NULL OR r.client_addr OPERATOR(pg_catalog.=) client)
   AND (backend IS NULL OR r.backend_type OPERATOR(pg_catalog.=) backend)
   AND (backend IS NOT NULL OR NOT pgsentinel_own_worker(r.backend_type))
   AND (query_id IS NULL OR r.queryid OPERATOR(pg_catalog.=) query_id)
   AND (wait_class IS NULL OR r.wait_event_type OPERATOR(pg_catalog.=) wait_class)
   AND (event IS NULL OR r.wait_event OPERATOR(pg_catalog.=) event)
   AND (session_pid IS NULL OR r.pid OPERATOR(pg_catalog.=) session_pid)
UNION ALL
-- the rows of the other pieces (OFFSET 0 keeps the call a subquery of its
-- own: a piece's ends reach the scans of the history as parameters, so
-- that only the partitions and blocks of the piece are read; so for the
-- rollups above, whose views group their rows: there a join's condition
-- would not reach the scans and every bucket would be grouped)
SELECT h.ash_time, h.ash_time, h.datname, h.usename, h.application_name,
       h.client_addr, h.pid, h.backend_type, h.wait_event_type, h.wait_event,
       h.queryid, h.top_level_query, h.weight
  FROM pc CROSS JOIN LATERAL (
       SELECT x.* FROM pgsentinel_ash(pc.lo, pc.hi, dbname, username, application,
                                      client, backend, query_id, wait_class,
                                      event, session_pid, server) x
       OFFSET 0) h
 WHERE pc.kind OPERATOR(pg_catalog.=) 'raw'
   AND h.weight OPERATOR(pg_catalog.>) 0::pg_catalog.float8
   AND (backend IS NOT NULL OR NOT pgsentinel_own_worker(h.backend_type));
END;

-- The seconds observed in a window, read as pgsentinel_load() reads the
-- time: per rollup bucket (samples, seconds, the most rows of one sample)
-- and per sample of the rest.
CREATE FUNCTION pgsentinel_observed(since timestamptz, until timestamptz,
                                    grain text, server text DEFAULT NULL)
RETURNS TABLE (t timestamptz, samples bigint, observed double precision,
               peak integer)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH pc AS MATERIALIZED (
    SELECT p.kind, p.lo, p.hi
      FROM pgsentinel_window_pieces(since, until, grain, server) p
)
SELECT o.bucket, o.samples, o.observed, o.peak
  FROM pc JOIN pgsentinel_sample_hour o
    ON o.bucket OPERATOR(pg_catalog.>=) pc.lo AND o.bucket OPERATOR(pg_catalog.<) pc.hi
 WHERE pc.kind OPERATOR(pg_catalog.=) 'hour' AND server IS NULL
UNION ALL
SELECT o.bucket, o.samples, o.observed, o.peak
  FROM pc JOIN pgsentinel_sample_minute o
    ON o.bucket OPERATOR(pg_catalog.>=) pc.lo AND o.bucket OPERATOR(pg_catalog.<) pc.hi
 WHERE pc.kind OPERATOR(pg_catalog.=) 'minute' AND server IS NULL
UNION ALL
SELECT o.bucket, o.samples, o.observed, o.peak
  FROM pc CROSS JOIN LATERAL (SELECT x.* FROM pgsentinel_fleet_observed_in(server, pc.kind, pc.lo, pc.hi) x
                               OFFSET 0) o
 WHERE pc.kind OPERATOR(pg_catalog.<>) 'raw' AND server IS NOT NULL
UNION ALL
SELECT s.sample_time, 1::pg_catalog.int8, s.weight, s.active_sessions
  FROM pc CROSS JOIN LATERAL (SELECT x.* FROM pgsentinel_samples_in(pc.lo, pc.hi, server) x
                               OFFSET 0) s
 WHERE pc.kind OPERATOR(pg_catalog.=) 'raw';
END;

-- Average active sessions over a window, in total (by NULL) or split by a
-- dimension; the total has one row even when no session was active.
CREATE FUNCTION pgsentinel_aas(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    by text DEFAULT NULL,
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS TABLE (
    key text,
    db_time double precision,
    aas double precision,
    pct double precision,
    observed double precision,
    coverage double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH obs AS (
    SELECT coalesce(pg_catalog.sum(s.observed), 0::pg_catalog.float8) AS observed,
           pgsentinel_window_seconds(since, until) AS secs
      FROM pgsentinel_observed(since, until, 'hour'::pg_catalog.text, server) s
     WHERE pgsentinel_dimension(by) IS NOT DISTINCT FROM by
       AND pgsentinel_check_request(since, until, NULL::pg_catalog.int4, NULL::pg_catalog.int4,
                                    dbname, username, wait_class, server, application)
), r AS (
    SELECT pgsentinel_dimension_key(by, h.wait_event_type, h.wait_event,
               h.queryid, h.pid, h.datname, h.usename, h.application_name,
               h.client_addr, h.backend_type) AS key,
           pg_catalog.sum(h.db_time) AS db_time
      FROM pgsentinel_load(since, until, 'hour'::pg_catalog.text, by, dbname, username,
                           application, client, backend, query_id, wait_class,
                           event, session_pid, server) h
     GROUP BY 1
), k AS (
    SELECT r.key, r.db_time FROM r WHERE by IS NOT NULL
    UNION ALL
    SELECT NULL, coalesce(pg_catalog.sum(r.db_time), 0::pg_catalog.float8)
      FROM r HAVING by IS NULL
)
SELECT k.key, k.db_time,
       k.db_time OPERATOR(pg_catalog./) NULLIF(o.observed, 0::pg_catalog.float8),
       100::pg_catalog.float8 OPERATOR(pg_catalog.*) k.db_time
           OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(k.db_time) OVER (), 0::pg_catalog.float8),
       o.observed,
       o.observed OPERATOR(pg_catalog./) o.secs
  FROM k CROSS JOIN obs o
 ORDER BY k.db_time DESC, k.key;
END;

-- pgsentinel_aas_series() of several dimensions (bys) at once, from one
-- read of the load (the report's chart and its tabs): the series of each
-- dimension (by), as pgsentinel_aas_series() gives it, each dimension
-- once.  The dimensions of sessions ('session', 'client',
-- 'session_group') read the sessions' rollups, the others theirs: two
-- reads when both are asked (three for 'statement' with a client or
-- session filter, which reads rows).  No dimensions (bys NULL or empty):
-- no rows.
CREATE FUNCTION pgsentinel_aas_series_of(
    since timestamptz, until timestamptz, bucket interval, bys text[],
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS TABLE (
    by text,
    bucket_start timestamptz,
    key text,
    db_time double precision,
    aas double precision,
    observed double precision,
    coverage double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH d AS MATERIALIZED (
    -- each dimension once, with the kind of load it reads: 's' the
    -- sessions' rollups; 'q' the rows (statements, when a client or
    -- session filter reads sessions); 'o' the others' rollups
    SELECT u.by, pgsentinel_dimension(u.by) AS checked,
           CASE WHEN u.by OPERATOR(pg_catalog.=) ANY ('{session,client,session_group}'::text[])
                THEN 's'
                WHEN u.by OPERATOR(pg_catalog.=) 'statement'
                     AND (client IS NOT NULL OR session_pid IS NOT NULL) THEN 'q'
                ELSE 'o' END AS kind
      FROM (SELECT DISTINCT x.by FROM pg_catalog.unnest(bys) AS x(by)) u
), p0 AS (
    SELECT coalesce(pgsentinel_series_bucket(since, until, bucket),
                    pgsentinel_auto_bucket(since, until, 60)) AS step,
           timestamptz '2000-01-01 00:00:00+00' AS origin,
           -- the others' load: by statement if asked (it may need the rows)
           (SELECT d.by FROM d WHERE d.kind OPERATOR(pg_catalog.=) 'o'
             ORDER BY d.by OPERATOR(pg_catalog.=) 'statement' DESC NULLS LAST
             LIMIT 1) AS other_by
     WHERE pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
       AND NOT EXISTS (SELECT FROM d WHERE d.checked IS DISTINCT FROM d.by)
       AND pgsentinel_check_request(since, until, NULL::pg_catalog.int4, NULL::pg_catalog.int4,
                                    dbname, username, wait_class, server, application)
), p AS (
    -- a bucket made of whole hours (minutes) may read the hourly (minute)
    -- rollups: the origin is on a whole hour
    SELECT p0.step, p0.origin, p0.other_by,
           CASE WHEN extract(epoch FROM p0.step) OPERATOR(pg_catalog.%) 3600::pg_catalog.numeric
                     OPERATOR(pg_catalog.=) 0::pg_catalog.numeric THEN 'hour'
                WHEN extract(epoch FROM p0.step) OPERATOR(pg_catalog.%) 60::pg_catalog.numeric
                     OPERATOR(pg_catalog.=) 0::pg_catalog.numeric THEN 'minute'
           END AS grain
      FROM p0
), b AS (
    SELECT g.bucket_start, g.secs
      FROM p, pgsentinel_buckets(since, until, p.step, p.origin) g
), obs AS (
    SELECT pg_catalog.date_bin(p.step, s.t, p.origin) AS bucket_start,
           pg_catalog.sum(s.observed) AS observed
      FROM p, pgsentinel_observed(since, until, p.grain, server) s
     GROUP BY 1
), l AS MATERIALIZED (
    -- the load read once per kind of dimension (materialized: inlined, the
    -- read would run once per dimension), summed by bucket and every
    -- column a dimension's key is made of
    SELECT x.kind, pg_catalog.date_bin(p.step, h.t, p.origin) AS bucket_start,
           h.wait_event_type, h.wait_event, h.queryid, h.pid, h.datname, h.usename,
           h.application_name, h.client_addr, h.backend_type,
           pg_catalog.sum(h.db_time) AS db_time
      FROM p
     CROSS JOIN (SELECT DISTINCT d.kind FROM d) x
     CROSS JOIN LATERAL pgsentinel_load(since, until, p.grain,
                            CASE x.kind WHEN 's' THEN 'session' WHEN 'q' THEN 'statement'
                                        ELSE p.other_by END,
                            dbname, username, application, client, backend, query_id,
                            wait_class, event, session_pid, server) h
     GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
), r AS (
    -- each of those sums into the key of every dimension of its kind
    SELECT d.by, l.bucket_start,
           pgsentinel_dimension_key(d.by, l.wait_event_type, l.wait_event,
               l.queryid, l.pid, l.datname, l.usename, l.application_name,
               l.client_addr, l.backend_type) AS key,
           pg_catalog.sum(l.db_time) AS db_time
      FROM l JOIN d ON d.kind OPERATOR(pg_catalog.=) l.kind
     GROUP BY 1, 2, 3
), keys AS (
    SELECT DISTINCT r.by, r.key FROM r WHERE r.by IS NOT NULL
    UNION ALL
    SELECT d.by, NULL FROM d
     WHERE d.by IS NULL
        OR NOT EXISTS (SELECT 1 FROM r WHERE r.by OPERATOR(pg_catalog.=) d.by)
)
SELECT k.by, b.bucket_start, k.key,
       coalesce(r.db_time, 0::pg_catalog.float8),
       coalesce(r.db_time OPERATOR(pg_catalog./) NULLIF(o.observed, 0::pg_catalog.float8),
                0::pg_catalog.float8),
       coalesce(o.observed, 0::pg_catalog.float8),
       least(coalesce(o.observed, 0::pg_catalog.float8) OPERATOR(pg_catalog./) b.secs,
             1::pg_catalog.float8)
  FROM b CROSS JOIN keys k
  LEFT JOIN obs o ON o.bucket_start OPERATOR(pg_catalog.=) b.bucket_start
  LEFT JOIN r
    ON r.by IS NOT DISTINCT FROM k.by
   AND r.bucket_start OPERATOR(pg_catalog.=) b.bucket_start
   AND r.key IS NOT DISTINCT FROM k.key
 ORDER BY 1, 2, 3;
END;

-- Average active sessions as a time series: one row per bucket and key
-- (the keys seen in the window, CPU a class of its own), 0 where nothing
-- was active, and the bucket's coverage (0 where the sampler saw nothing).
-- The buckets are aligned on whole multiples of their length; a sample
-- counts in the bucket of its time, so buckets shorter than the sampling
-- period alternate between full ones and ones without data (coverage 0).
CREATE FUNCTION pgsentinel_aas_series(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    bucket interval DEFAULT NULL,
    by text DEFAULT 'wait_class',
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS TABLE (
    bucket_start timestamptz,
    key text,
    db_time double precision,
    aas double precision,
    observed double precision,
    coverage double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT s.bucket_start, s.key, s.db_time, s.aas, s.observed, s.coverage
  FROM pgsentinel_aas_series_of(since, until, bucket, ARRAY[by], dbname, username,
                                application, client, backend, query_id, wait_class,
                                event, session_pid, server) s
 ORDER BY 1, 2;
END;

-- AAS, peak and coverage over the usual trailing windows ending at until.
-- peak: the most sessions active at one sample (weights divided by the
-- sample's own).
CREATE FUNCTION pgsentinel_periods(
    until timestamptz DEFAULT pg_catalog.now(),
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS TABLE (
    period text,
    window_start timestamptz,
    window_end timestamptz,
    db_time double precision,
    aas double precision,
    peak double precision,
    observed double precision,
    coverage double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH w AS (
    SELECT v.label, v.len, v.ord,
           pgsentinel_periods.until OPERATOR(pg_catalog.-) v.len AS since
      FROM (VALUES ('1 minute', interval '1 minute', 1),
                   ('5 minutes', interval '5 minutes', 2),
                   ('15 minutes', interval '15 minutes', 3),
                   ('1 hour', interval '1 hour', 4),
                   ('6 hours', interval '6 hours', 5),
                   ('1 day', interval '1 day', 6),
                   ('7 days', interval '7 days', 7),
                   ('1 month', interval '1 month', 8)) AS v(label, len, ord)
), l AS (
    SELECT w.label, w.since, w.ord,
           (SELECT pg_catalog.sum(h.db_time)
              FROM pgsentinel_load(w.since, pgsentinel_periods.until, 'hour'::pg_catalog.text, NULL::pg_catalog.text,
                                   dbname, username, application, client,
                                   backend, query_id, wait_class, event,
                                   session_pid, server) h) AS db_time,
           o.observed, o.peak
      FROM w CROSS JOIN LATERAL (
           SELECT pg_catalog.sum(x.observed) AS observed, pg_catalog.max(x.peak) AS peak
             FROM pgsentinel_observed(w.since, pgsentinel_periods.until, 'hour'::pg_catalog.text, server) x) o
), filtered AS MATERIALIZED (
    -- with a filter, the peak counts the rows of each sample that pass it,
    -- which no rollup keeps: read from rows, once.  A row weighs what its
    -- sample does (or 0: sampled idle), so a sample's count is its rows'
    -- weights over the largest of them, without a join to the samples
    -- (which the planner, blind to the rows' number, ran as a nested loop)
    SELECT h.ash_time,
           pg_catalog.sum(h.weight) OPERATOR(pg_catalog./)
               NULLIF(pg_catalog.max(h.weight), 0::pg_catalog.float8) AS n
      FROM pgsentinel_ash(pgsentinel_periods.until OPERATOR(pg_catalog.-) interval '1 month',
                          pgsentinel_periods.until, dbname, username,
                          application, client, backend, query_id, wait_class,
                          event, session_pid, server) h
     WHERE NOT (dbname IS NULL AND username IS NULL AND application IS NULL
                AND client IS NULL AND backend IS NULL AND query_id IS NULL
                AND wait_class IS NULL AND event IS NULL AND session_pid IS NULL)
     GROUP BY h.ash_time, h.sample_id
)
SELECT l.label, l.since, pgsentinel_periods.until,
       coalesce(l.db_time, 0::pg_catalog.float8),
       coalesce(l.db_time, 0::pg_catalog.float8) OPERATOR(pg_catalog./) NULLIF(l.observed, 0::pg_catalog.float8),
       CASE WHEN dbname IS NULL AND username IS NULL AND application IS NULL
                 AND client IS NULL AND backend IS NULL AND query_id IS NULL
                 AND wait_class IS NULL AND event IS NULL AND session_pid IS NULL
            THEN l.peak::pg_catalog.float8
            WHEN l.observed OPERATOR(pg_catalog.>) 0::pg_catalog.float8
            THEN coalesce((SELECT pg_catalog.max(f.n) FROM filtered f
                            WHERE f.ash_time OPERATOR(pg_catalog.>=) l.since),
                          0::pg_catalog.float8)
       END,
       coalesce(l.observed, 0::pg_catalog.float8),
       coalesce(l.observed, 0::pg_catalog.float8) OPERATOR(pg_catalog./)
           extract(epoch FROM pgsentinel_periods.until OPERATOR(pg_catalog.-) l.since)::pg_catalog.float8
  FROM l
 ORDER BY l.ord;
END;
