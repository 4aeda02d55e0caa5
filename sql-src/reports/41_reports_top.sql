
-- Reports: what took the time (top N by dimension, statements with their
-- statements-history figures), who blocked whom (blocking trees), and what
-- changed between two periods (docs/reports.md).

-- The top n values of a dimension by DB time in a window, each with its
-- share of the DB time, its aas, the three waits it spent the most time
-- in (wait_profile) and a description: the last text of a statement, who
-- a session was.

-- The top-level text of each statement of qids among the archive's rows
-- of [since, until), that of the latest day and query start among them
-- (of a database, role, application if given), for the reports that read
-- a statement from the rollups only (which keep its query id, not its
-- text).  All the statements in one pass: each batch read is decoded
-- whole, whichever statement is looked for.  No qid: no batch is read.
CREATE FUNCTION pgsentinel_statement_texts_in(qids bigint[], since timestamptz,
                                              until timestamptz, dbname text,
                                              username text, application text)
RETURNS TABLE (queryid bigint, query text)
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT DISTINCT ON (a.queryid) a.queryid, a.top_level_query
  FROM pgsentinel_activity_archive a
 WHERE pg_catalog.cardinality(qids) OPERATOR(pg_catalog.>) 0
   AND a.queryid OPERATOR(pg_catalog.=) ANY (qids)
   AND a.top_level_query IS NOT NULL
   AND a.batch_start OPERATOR(pg_catalog.>=) pg_catalog.date_trunc('day', since, 'UTC')
   AND a.batch_start OPERATOR(pg_catalog.<) until
   AND a.batch_end OPERATOR(pg_catalog.>=) since
   AND (a.query_start IS NULL OR a.query_start OPERATOR(pg_catalog.<) until)
   AND (dbname IS NULL OR a.datname OPERATOR(pg_catalog.=) dbname)
   AND (username IS NULL OR a.usename OPERATOR(pg_catalog.=) username)
   AND (application IS NULL OR a.application_name OPERATOR(pg_catalog.=) application)
 ORDER BY a.queryid, a.day DESC, a.query_start DESC NULLS LAST, a.activity_id DESC;
END;

-- Reads pgsentinel_load(): the window's top items of one dimension.
CREATE FUNCTION pgsentinel_top(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    dimension text DEFAULT 'wait_event',
    n integer DEFAULT 10,
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
    rank bigint,
    key text,
    description text,
    db_time double precision,
    aas double precision,
    pct double precision,
    wait_profile text)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH obs AS (
    SELECT coalesce(pg_catalog.sum(s.observed), 0::pg_catalog.float8) AS observed
      FROM pgsentinel_observed(since, until, 'hour'::pg_catalog.text, server) s
     WHERE pgsentinel_dimension(dimension) IS NOT NULL
       AND pgsentinel_check_request(since, until, n, NULL::pg_catalog.int4,
                                    dbname, username, wait_class, server, application)
), r AS (
    SELECT pgsentinel_dimension_key(dimension, h.wait_event_type, h.wait_event,
               h.queryid, h.pid, h.datname, h.usename, h.application_name,
               h.client_addr, h.backend_type) AS key,
           pgsentinel_dimension_key('wait_event'::pg_catalog.text, h.wait_event_type, h.wait_event,
               NULL::pg_catalog.int8, NULL::pg_catalog.int4, NULL::pg_catalog.text, NULL::pg_catalog.text,
               NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.text) AS wait,
           CASE WHEN dimension OPERATOR(pg_catalog.=) 'statement' THEN h.query
                WHEN dimension OPERATOR(pg_catalog.=) 'session' THEN
                    pg_catalog.format('%s@%s %s (%s)', h.usename, h.datname,
                                      h.application_name, h.backend_type)
           END AS description,
           h.last_time, h.db_time
      FROM pgsentinel_load(since, until, 'hour'::pg_catalog.text, dimension, dbname,
                           username, application, client, backend, query_id,
                           wait_class, event, session_pid, server) h
), w AS (
    SELECT r.key, r.wait, pg_catalog.sum(r.db_time) AS db_time,
           (pg_catalog.array_agg(r.description ORDER BY r.last_time DESC)
                FILTER (WHERE r.description IS NOT NULL))[1] AS description,
           pg_catalog.max(r.last_time) FILTER (WHERE r.description IS NOT NULL) AS described_at,
           pg_catalog.row_number() OVER (PARTITION BY r.key
                                         ORDER BY pg_catalog.sum(r.db_time) DESC, r.wait) AS nth
      FROM r GROUP BY r.key, r.wait
), k AS (
    SELECT w.key, pg_catalog.sum(w.db_time) AS db_time,
           (pg_catalog.array_agg(w.description ORDER BY w.described_at DESC)
                FILTER (WHERE w.description IS NOT NULL))[1] AS description
      FROM w GROUP BY w.key
), ranked AS (
    SELECT pg_catalog.row_number() OVER (ORDER BY k.db_time DESC, k.key) AS rank,
           k.key, k.description, k.db_time,
           k.db_time OPERATOR(pg_catalog./) NULLIF(o.observed, 0::pg_catalog.float8) AS aas,
           100::pg_catalog.float8 OPERATOR(pg_catalog.*) k.db_time
               OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(k.db_time) OVER (), 0::pg_catalog.float8) AS pct
      FROM k CROSS JOIN obs o
-- the statements of the top without a text (read from rollups only):
-- their latest texts, from the window's last five minutes first, then its
-- last hour, the rest only for those not found there
), untold AS (
    SELECT x.key::pg_catalog.int8 AS qid
      FROM ranked x
     WHERE x.rank OPERATOR(pg_catalog.<=) n AND x.description IS NULL
       AND dimension OPERATOR(pg_catalog.=) 'statement' AND server IS NULL
), last5 AS (
    SELECT t.queryid, t.query
      FROM pgsentinel_statement_texts_in(
               ARRAY(SELECT u.qid FROM untold u
                      WHERE until OPERATOR(pg_catalog.-) since OPERATOR(pg_catalog.>) interval '5 minutes'),
               until OPERATOR(pg_catalog.-) interval '5 minutes', until,
               dbname, username, application) t
), last60 AS (
    SELECT t.queryid, t.query
      FROM pgsentinel_statement_texts_in(
               ARRAY(SELECT u.qid FROM untold u
                      WHERE until OPERATOR(pg_catalog.-) since OPERATOR(pg_catalog.>) interval '1 hour'
                        AND NOT EXISTS (SELECT FROM last5 f WHERE f.queryid OPERATOR(pg_catalog.=) u.qid)),
               until OPERATOR(pg_catalog.-) interval '1 hour', until,
               dbname, username, application) t
), texts AS (
    SELECT f.queryid, f.query FROM last5 f
    UNION ALL
    SELECT h.queryid, h.query FROM last60 h
    UNION ALL
    SELECT t.queryid, t.query
      FROM pgsentinel_statement_texts_in(
               ARRAY(SELECT u.qid FROM untold u
                      WHERE NOT EXISTS (SELECT FROM last5 f WHERE f.queryid OPERATOR(pg_catalog.=) u.qid)
                        AND NOT EXISTS (SELECT FROM last60 h WHERE h.queryid OPERATOR(pg_catalog.=) u.qid)),
               since, until, dbname, username, application) t
)
SELECT x.rank, x.key,
       CASE WHEN x.description IS NULL AND dimension OPERATOR(pg_catalog.=) 'statement'
                 AND server IS NOT NULL
            -- read from rollups only: the latest text of the statement
            THEN pgsentinel_fleet_statement_text(server, x.key::pg_catalog.int8, since, until,
                                                 dbname, username, application)
            WHEN x.description IS NULL AND dimension OPERATOR(pg_catalog.=) 'statement'
            THEN (SELECT t.query FROM texts t
                   WHERE t.queryid OPERATOR(pg_catalog.=) x.key::pg_catalog.int8)
            ELSE x.description END,
       x.db_time, x.aas, x.pct,
       (SELECT pg_catalog.string_agg(pg_catalog.format('%s %s%%', coalesce(w.wait, '?'),
                   pg_catalog.round((100::pg_catalog.float8 OPERATOR(pg_catalog.*) w.db_time
                       OPERATOR(pg_catalog./) x.db_time)::pg_catalog.numeric)), ', '
                   ORDER BY w.nth)
          FROM w
         WHERE w.key IS NOT DISTINCT FROM x.key AND w.nth OPERATOR(pg_catalog.<=) 3)
  FROM ranked x
 WHERE x.rank OPERATOR(pg_catalog.<=) n
 ORDER BY x.rank;
END;

-- The calls, rows and execution time of each statement (by top-level
-- query id) in the window, from the statements history (the archive's and
-- the ring's, pgsentinel_statements_history; a fleet server's: the one
-- the repository keeps of it), with its latest text there.  Each delta is
-- spread evenly over its interval and counted for the share of it in the
-- window (pgsentinel_window_share()): a reading taken after the window
-- counts the calls made before its end, one whose interval began before
-- it only the rest.  The statements worker reads every statement that
-- changed once a sweep (pgsentinel_pgssh.sweep_interval, or the sampling
-- period when longer: a sweep rides on a sample), so the calls of an
-- interval were made in its last sweep interval at most: an interval is
-- taken to start no earlier than that before its reading (this server's
-- settings, now: a fleet server's or earlier ones may differ; a sweep
-- delayed by the worker's rest moves calls by seconds).  seconds:
-- the part of the window from the statement's first interval to its last
-- reading.
CREATE FUNCTION pgsentinel_statement_calls_in(since timestamptz, until timestamptz,
                                              server text DEFAULT NULL)
RETURNS TABLE (queryid bigint, query text, calls double precision,
               rows double precision, exec_ms double precision,
               seconds double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH sweep AS (
    -- a sweep rides on a sample: one every sweep interval, or sampling
    -- period if that is longer (0: sweeps are off)
    SELECT pg_catalog.make_interval(secs => CASE WHEN i.secs OPERATOR(pg_catalog.>) 0::pg_catalog.float8
                                                 THEN greatest(i.secs, p.secs)
                                                 ELSE 0::pg_catalog.float8 END) AS span
      FROM (SELECT coalesce(pg_catalog.sum(s.setting::pg_catalog.float8), 0::pg_catalog.float8) AS secs
              FROM pg_catalog.pg_settings s
             WHERE s.name OPERATOR(pg_catalog.=) 'pgsentinel_pgssh.sweep_interval'::pg_catalog.text) i,
           (SELECT coalesce(pg_catalog.sum(s.setting::pg_catalog.float8), 0::pg_catalog.float8) AS secs
              FROM pg_catalog.pg_settings s
             WHERE s.name OPERATOR(pg_catalog.=) 'pgsentinel_ash.sampling_period'::pg_catalog.text) p
), r AS (
    SELECT x.queryid, x.toplevel, x.reset, x.ash_time, x.prev_ash_time,
           x.calls, x.rows, x.exec_ms, x.query
      FROM pgsentinel_statements_history x
     WHERE server IS NULL
       AND x.ash_time OPERATOR(pg_catalog.>) since
       AND x.ash_time OPERATOR(pg_catalog.<) (until OPERATOR(pg_catalog.+) (SELECT sw.span FROM sweep sw))
       AND x.batch_start OPERATOR(pg_catalog.>=)
           pg_catalog.date_trunc('day', since, 'UTC')
       AND x.batch_start OPERATOR(pg_catalog.<) (until OPERATOR(pg_catalog.+) (SELECT sw.span FROM sweep sw))
       AND x.batch_end OPERATOR(pg_catalog.>=) since
    UNION ALL
    SELECT y.queryid, y.toplevel, y.reset, y.ash_time, y.prev_ash_time,
           y.calls, y.rows, y.exec_ms, NULL::pg_catalog.text
      FROM sweep, pgsentinel_fleet_statements_in(server, since, until OPERATOR(pg_catalog.+) sweep.span, true) y
     WHERE server IS NOT NULL
), d AS (
    SELECT r.*, i.start_time,
           pgsentinel_window_share(since, until, i.start_time, r.ash_time) AS share
      FROM r, sweep,
           LATERAL (SELECT CASE WHEN sweep.span OPERATOR(pg_catalog.>) interval '0'
                                THEN greatest(r.prev_ash_time, r.ash_time OPERATOR(pg_catalog.-) sweep.span)
                                ELSE r.prev_ash_time END) AS i(start_time)
     WHERE r.toplevel IS NOT FALSE AND NOT r.reset
)
SELECT d.queryid,
       (pg_catalog.array_agg(d.query ORDER BY d.ash_time DESC)
            FILTER (WHERE d.query IS NOT NULL))[1],
       pg_catalog.sum(d.calls::pg_catalog.float8 OPERATOR(pg_catalog.*) d.share),
       pg_catalog.sum(d.rows::pg_catalog.float8 OPERATOR(pg_catalog.*) d.share),
       pg_catalog.sum(d.exec_ms OPERATOR(pg_catalog.*) d.share),
       pg_catalog.date_part('epoch'::pg_catalog.text,
           least(pg_catalog.max(d.ash_time), until) OPERATOR(pg_catalog.-)
           greatest(pg_catalog.min(d.start_time), since))
  FROM d
 WHERE d.share OPERATOR(pg_catalog.>) 0::pg_catalog.float8
 GROUP BY d.queryid;
END;

-- The top n statements (by top-level query id) by DB time: their last
-- text, share of DB time and wait profile, and from the statements history
-- (pgsentinel_statement_calls_in()) their calls per second of the window,
-- milliseconds and rows per call; NULL when the history has no reading of
-- the statement in the window.  counted: the share of the window from the
-- statement's first interval to its last reading (below 1 with sweeps
-- off: calls before its first reading and after its last are not
-- counted, calls/s is a lower bound; with sweeps on, a statement that did
-- not run throughout has no more calls to count).
CREATE FUNCTION pgsentinel_top_statements(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    n integer DEFAULT 10,
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
    rank bigint,
    queryid bigint,
    query text,
    db_time double precision,
    aas double precision,
    pct double precision,
    wait_profile text,
    calls_per_s double precision,
    ms_per_call double precision,
    rows_per_call double precision,
    counted double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH t AS (
    SELECT * FROM pgsentinel_top(since, until, 'statement'::pg_catalog.text, n, dbname, username,
                                 application, client, backend, query_id,
                                 wait_class, event, session_pid, server)
)
SELECT t.rank, t.key::pg_catalog.int8, t.description, t.db_time, t.aas, t.pct,
       t.wait_profile,
       st.calls OPERATOR(pg_catalog./) pgsentinel_window_seconds(since, until),
       st.exec_ms OPERATOR(pg_catalog./) NULLIF(st.calls, 0::pg_catalog.float8),
       st.rows OPERATOR(pg_catalog./) NULLIF(st.calls, 0::pg_catalog.float8),
       -- (least() would turn a statement without readings, NULL, into 1)
       CASE WHEN st.seconds OPERATOR(pg_catalog.>=) pgsentinel_window_seconds(since, until)
            THEN 1::pg_catalog.float8
            ELSE st.seconds OPERATOR(pg_catalog./) pgsentinel_window_seconds(since, until) END
  FROM t LEFT JOIN pgsentinel_statement_calls_in(since, until, server) st
    ON st.queryid OPERATOR(pg_catalog.=) t.key::pg_catalog.int8
 ORDER BY t.rank;
END;

-- The top n statements by what pg_stat_statements counts, every statement
-- of the statements history (pgsentinel_statement_calls_in()), sampled or
-- not: by = 'time' (execution time, the default), 'calls' or 'rows'.
-- calls_per_s over the window; exec_s: seconds of execution in it; pct:
-- its share of every statement's execution time; counted as in
-- pgsentinel_top_statements().  The answer to "which statements run most
-- often, or take the most time", which sampling alone misses for short
-- statements.
CREATE FUNCTION pgsentinel_top_calls(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    n integer DEFAULT 10,
    by text DEFAULT 'time',
    server text DEFAULT NULL)
RETURNS TABLE (
    rank bigint,
    queryid bigint,
    query text,
    calls_per_s double precision,
    ms_per_call double precision,
    rows_per_call double precision,
    exec_s double precision,
    pct double precision,
    counted double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    secs constant double precision := @extschema@.pgsentinel_window_seconds(since, until);
    x record;
BEGIN
    IF by IS NULL OR by NOT IN ('time', 'calls', 'rows') THEN
        RAISE EXCEPTION 'unknown order for the top statements: %', coalesce(by, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use by => ''time'' (execution time), ''calls'' or ''rows''.';
    END IF;
    IF n IS NULL OR n < 1 THEN
        RAISE EXCEPTION 'the number of statements must be at least 1, not %', coalesce(n::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Leave n out for the top 10.';
    END IF;
    FOR x IN
        WITH s AS (
            SELECT c.*, sum(c.exec_ms) OVER () AS all_ms
              FROM @extschema@.pgsentinel_statement_calls_in(since, until, server) c
        )
        SELECT s.*, row_number() OVER (ORDER BY CASE by WHEN 'time' THEN s.exec_ms
                                                       WHEN 'calls' THEN s.calls
                                                       ELSE s.rows END DESC NULLS LAST,
                                                  s.queryid) AS r
          FROM s
         ORDER BY r
         LIMIT n
    LOOP
        rank := x.r;
        queryid := x.queryid;
        query := x.query;
        -- a fleet server's text: its latest in the window
        IF query IS NULL AND server IS NOT NULL THEN
            query := @extschema@.pgsentinel_fleet_statement_history_text(server, x.queryid, since, until);
        END IF;
        calls_per_s := x.calls / secs;
        ms_per_call := x.exec_ms / NULLIF(x.calls, 0::float8);
        rows_per_call := x.rows / NULLIF(x.calls, 0::float8);
        exec_s := x.exec_ms / 1000::float8;
        pct := 100::float8 * x.exec_ms / NULLIF(x.all_ms, 0::float8);
        counted := CASE WHEN x.seconds >= secs THEN 1::float8 ELSE x.seconds / secs END;
        RETURN NEXT;
    END LOOP;
END
$$;

-- The blocking trees of a window.  In each sample, a session waits behind
-- every pid pg_blocking_pids() gave for it (soft and hard blockers once);
-- a root is a blocker that was not itself waiting in that sample, active
-- or idle (the sampler samples every blocker, whatever its state; only a
-- prepared transaction has no row).  A root's samples more than a minute
-- apart are separate episodes, each its own tree (episode: their number,
-- in the order they began): one row per root and episode (depth 0: the
-- samples it blocked in, the sessions and DB time behind it, the levels
-- under it; its role, application, client, transaction start, state and
-- statement at the last sample in which it was a root; first_seen and
-- last_seen: its first and last such sample), then one per session
-- behind it (depth: its level, blocked_by: the sessions it waited for,
-- db_time: its own time spent behind that root, first_seen and
-- last_seen: when it was behind it; lock, lock_mode, blocker_lock_modes:
-- the lock it waited for then, in words, the mode it wanted, and what its
-- blocker held of it).  Whole hours and minutes of the
-- archive are read from the blocking rollups, the rest from the rows of
-- the samples in which somebody waited (the archive marks them:
-- blocked_sample), through the same pgsentinel_blocking_parts(), by
-- minute while the minute rollups are kept
-- (pgsentinel_archive.minute_retention), by hour before: episodes are
-- told apart to the minute, or to the hour in older windows and a fleet
-- server's.
CREATE FUNCTION pgsentinel_blocking_trees(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    dbname text DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS TABLE (
    root_pid integer,
    depth integer,
    pid integer,
    blocked_by integer[],
    usename text,
    state text,
    wait_event text,
    query text,
    samples bigint,
    sessions bigint,
    levels integer,
    db_time double precision,
    aas double precision,
    application_name text,
    client_addr text,
    xact_start timestamptz,
    first_seen timestamptz,
    last_seen timestamptz,
    episode integer,
    lock text,
    lock_mode text,
    blocker_lock_modes text)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH fine AS (
    -- by minute while the minute rollups keep the window
    SELECT server IS NULL
           AND since OPERATOR(pg_catalog.>=) (pg_catalog.now() OPERATOR(pg_catalog.-)
               pg_catalog.make_interval(mins => coalesce(
                   (SELECT pg_catalog.sum(s.setting::pg_catalog.int4)
                      FROM pg_catalog.pg_settings s
                     WHERE s.name OPERATOR(pg_catalog.=) 'pgsentinel_archive.minute_retention'::pg_catalog.text),
                   0::pg_catalog.int8)::pg_catalog.int4)) AS minute
), pc0 AS MATERIALIZED (
    -- whole hours and minutes from the blocking rollups (unless a
    -- database is asked for: trees are of all databases there), the rest
    -- from rows
    SELECT p.kind, p.lo, p.hi
      FROM fine, pgsentinel_window_pieces(since, until,
                                    CASE WHEN dbname IS NULL
                                         THEN CASE WHEN fine.minute THEN 'minute' ELSE 'hour' END
                                    END, server) p
     WHERE pgsentinel_check_request(since, until, NULL::pg_catalog.int4, NULL::pg_catalog.int4,
                                    dbname, NULL::pg_catalog.text, NULL::pg_catalog.text, server)
), pc AS MATERIALIZED (
    -- rows are read an hour (UTC) at a time, the buckets of
    -- pgsentinel_blocking_parts(): each hour's rows make one JSON array,
    -- bounded whatever the window's length
    SELECT pc0.kind, greatest(pc0.lo, g.h) AS lo,
           least(pc0.hi, g.h OPERATOR(pg_catalog.+) interval '1 hour') AS hi
      FROM pc0 CROSS JOIN LATERAL pg_catalog.generate_series(
               pg_catalog.date_trunc('hour', pc0.lo, 'UTC'), pc0.hi, interval '1 hour') AS g(h)
     WHERE pc0.kind OPERATOR(pg_catalog.=) 'raw' AND g.h OPERATOR(pg_catalog.<) pc0.hi
    UNION ALL
    SELECT pc0.kind, pc0.lo, pc0.hi FROM pc0 WHERE pc0.kind OPERATOR(pg_catalog.<>) 'raw'
), parts AS MATERIALIZED (
    -- (of a sample, the rows that waited, and those of the sessions they
    -- waited for: pgsentinel_blocking_parts() reads no other, and making
    -- the others' JSON took most of an hour's trees from rows)
    SELECT b.* FROM pc, fine CROSS JOIN LATERAL pgsentinel_blocking_parts((
        WITH y AS MATERIALIZED (
            SELECT z.*,
                   CASE WHEN pg_catalog.cardinality(z.blocking_pids) OPERATOR(pg_catalog.>) 0
                        THEN z.blocking_pids
                        WHEN z.blockerpid IS NOT NULL THEN ARRAY[z.blockerpid] END AS blocking
              FROM pgsentinel_ash(pc.lo, pc.hi, dbname, server => server) z
             WHERE z.blocked_sample IS NOT FALSE
        ), bl AS MATERIALIZED (
            SELECT DISTINCT y.ash_time, y.sample_id, w.pid
              FROM y CROSS JOIN LATERAL pg_catalog.unnest(y.blocking) AS w(pid)
        )
        SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                      'ash_time', x.ash_time, 'sample_id', x.sample_id, 'pid', x.pid,
                      'weight', x.weight, 'usesysid', x.usesysid, 'usename', x.usename,
                      'application_name', x.application_name, 'client_addr', x.client_addr,
                      'xact_start', x.xact_start, 'state', x.state, 'wait_event_type', x.wait_event_type,
                      'wait_event', x.wait_event, 'query', x.top_level_query,
                      'blocking', x.blocking,
                      'blockerpid', x.blockerpid, 'blocker_state', x.blocker_state,
                      'blocker_usesysid', x.blocker_usesysid,
                      -- (a fleet server's relation OIDs mean nothing here)
                      'lock', pgsentinel_lock_name(x.lock_type, x.lock_relation, x.lock_target,
                                  CASE WHEN server IS NULL THEN x.datname END),
                      'lock_mode', x.lock_mode,
                      'blocker_lock_modes', x.blocker_lock_modes)), '[]')
          FROM y x
         WHERE x.blocking IS NOT NULL OR x.blocker_state IS NOT NULL
            OR EXISTS (SELECT FROM bl
                        WHERE bl.ash_time OPERATOR(pg_catalog.=) x.ash_time
                          AND bl.sample_id OPERATOR(pg_catalog.=) x.sample_id
                          AND bl.pid OPERATOR(pg_catalog.=) x.pid)),
        CASE WHEN fine.minute THEN 'minute' ELSE 'hour' END::pg_catalog.text) b
     WHERE pc.kind OPERATOR(pg_catalog.=) 'raw'
    UNION ALL
    SELECT r.bucket, r.kind, r.root_pid, r.pid, r.key_usesysid, r.depth,
           r.blocked_by, r.samples, r.db_time, r.last_time, r.usesysid, r.usename,
           r.state, r.wait_event_type, r.wait_event, r.query, r.first_time,
           r.application_name, r.client_addr, r.xact_start, r.lock, r.lock_mode,
           r.blocker_lock_modes
      FROM pc JOIN pgsentinel_blocking_hour r
        ON r.bucket OPERATOR(pg_catalog.>=) pc.lo AND r.bucket OPERATOR(pg_catalog.<) pc.hi
     WHERE pc.kind OPERATOR(pg_catalog.=) 'hour' AND server IS NULL
    UNION ALL
    SELECT r.bucket, r.kind, r.root_pid, r.pid, r.key_usesysid, r.depth,
           r.blocked_by, r.samples, r.db_time, r.last_time, r.usesysid, r.usename,
           r.state, r.wait_event_type, r.wait_event, r.query, r.first_time,
           r.application_name, r.client_addr, r.xact_start, r.lock, r.lock_mode,
           r.blocker_lock_modes
      FROM pc JOIN pgsentinel_blocking_minute r
        ON r.bucket OPERATOR(pg_catalog.>=) pc.lo AND r.bucket OPERATOR(pg_catalog.<) pc.hi
     WHERE pc.kind OPERATOR(pg_catalog.=) 'minute' AND server IS NULL
    UNION ALL
    SELECT r.bucket, r.kind, r.root_pid, r.pid, r.key_usesysid, r.depth,
           r.blocked_by, r.samples, r.db_time, r.last_time, r.usesysid, r.usename,
           r.state, r.wait_event_type, r.wait_event, r.query, r.first_time,
           r.application_name, r.client_addr, r.xact_start, r.lock, r.lock_mode,
           r.blocker_lock_modes
      FROM pc CROSS JOIN LATERAL (SELECT x.* FROM pgsentinel_fleet_blocking_in(server, pc.kind, pc.lo, pc.hi) x
                                   OFFSET 0) r
     WHERE pc.kind OPERATOR(pg_catalog.<>) 'raw' AND server IS NOT NULL
), rb AS (
    -- each root's buckets, in time order
    SELECT p.root_pid, p.bucket, pg_catalog.min(p.first_time) AS first_time,
           pg_catalog.max(p.last_time) AS last_time
      FROM parts p WHERE p.kind OPERATOR(pg_catalog.=) 'r'
     GROUP BY 1, 2
), ep AS (
    -- its episodes: a bucket that begins more than a minute after every
    -- earlier one of the root ended begins a new one
    SELECT x.root_pid, x.bucket,
           pg_catalog.sum(x.begins) OVER (PARTITION BY x.root_pid ORDER BY x.first_time, x.bucket
                                          ROWS UNBOUNDED PRECEDING) AS episode
      FROM (SELECT rb.root_pid, rb.bucket, rb.first_time,
                   CASE WHEN rb.first_time OPERATOR(pg_catalog.>)
                             (pg_catalog.max(rb.last_time) OVER (PARTITION BY rb.root_pid
                                  ORDER BY rb.first_time, rb.bucket
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                              OPERATOR(pg_catalog.+) interval '1 minute')
                        THEN 1 ELSE 0 END AS begins
              FROM rb) x
), pe AS (
    SELECT p.*, coalesce(ep.episode, 0::pg_catalog.int8) AS episode
      FROM parts p LEFT JOIN ep
        ON ep.root_pid OPERATOR(pg_catalog.=) p.root_pid
       AND ep.bucket OPERATOR(pg_catalog.=) p.bucket
     WHERE p.kind OPERATOR(pg_catalog.=) ANY ('{b,r}'::"char"[])
), obs AS (
    SELECT pg_catalog.sum(s.observed) AS observed
      FROM pgsentinel_observed(since, until, 'hour'::pg_catalog.text, server) s
), w AS (
    SELECT p.root_pid AS root, p.episode, p.pid, pg_catalog.max(p.depth) AS depth,
           pg_catalog.sum(p.samples)::pg_catalog.int8 AS samples,
           pg_catalog.sum(p.db_time) AS db_time,
           (pg_catalog.array_agg(p.usename ORDER BY p.last_time DESC))[1] AS usename,
           (pg_catalog.array_agg(p.state ORDER BY p.last_time DESC))[1] AS state,
           (pg_catalog.array_agg(pgsentinel_dimension_key('wait_event'::pg_catalog.text, p.wait_event_type,
                p.wait_event, NULL::pg_catalog.int8, NULL::pg_catalog.int4, NULL::pg_catalog.text,
                NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.text)
                ORDER BY p.last_time DESC))[1] AS wait,
           (pg_catalog.array_agg(p.query ORDER BY p.last_time DESC))[1] AS query,
           (pg_catalog.array_agg(p.application_name ORDER BY p.last_time DESC))[1] AS application_name,
           (pg_catalog.array_agg(p.client_addr ORDER BY p.last_time DESC))[1] AS client_addr,
           (pg_catalog.array_agg(p.xact_start ORDER BY p.last_time DESC))[1] AS xact_start,
           pg_catalog.min(p.first_time) AS first_seen,
           pg_catalog.max(p.last_time) AS last_seen,
           (pg_catalog.array_agg(p.lock ORDER BY p.last_time DESC))[1] AS lock,
           (pg_catalog.array_agg(p.lock_mode ORDER BY p.last_time DESC))[1] AS lock_mode,
           (pg_catalog.array_agg(p.blocker_lock_modes ORDER BY p.last_time DESC))[1] AS blocker_lock_modes
      FROM pe p WHERE p.kind OPERATOR(pg_catalog.=) 'b'
     GROUP BY 1, 2, 3
), wb AS (
    SELECT p.root_pid AS root, p.episode, p.pid,
           pg_catalog.array_agg(DISTINCT b.pid ORDER BY b.pid) AS blocked_by
      FROM pe p CROSS JOIN LATERAL pg_catalog.unnest(p.blocked_by) AS b(pid)
     WHERE p.kind OPERATOR(pg_catalog.=) 'b'
     GROUP BY 1, 2, 3
), rt0 AS (
    SELECT p.root_pid AS root, p.episode,
           pg_catalog.sum(p.samples)::pg_catalog.int8 AS samples,
           pg_catalog.min(p.first_time) AS first_seen,
           pg_catalog.max(p.last_time) AS last_seen
      FROM pe p WHERE p.kind OPERATOR(pg_catalog.=) 'r'
     GROUP BY 1, 2
), rt AS (
    SELECT rt0.*,
           (SELECT pg_catalog.count(DISTINCT w.pid) FROM w
             WHERE w.root OPERATOR(pg_catalog.=) rt0.root
               AND w.episode OPERATOR(pg_catalog.=) rt0.episode) AS sessions,
           (SELECT pg_catalog.sum(w.db_time) FROM w
             WHERE w.root OPERATOR(pg_catalog.=) rt0.root
               AND w.episode OPERATOR(pg_catalog.=) rt0.episode) AS db_time,
           (SELECT pg_catalog.max(w.depth) FROM w
             WHERE w.root OPERATOR(pg_catalog.=) rt0.root
               AND w.episode OPERATOR(pg_catalog.=) rt0.episode) AS depth
      FROM rt0
)
SELECT x.root_pid, x.depth, x.pid, x.blocked_by, x.usename, x.state, x.wait,
       x.query, x.samples, x.sessions, x.levels, x.db_time,
       x.db_time OPERATOR(pg_catalog./) NULLIF((SELECT o.observed FROM obs o), 0::pg_catalog.float8),
       x.application_name, x.client_addr, x.xact_start, x.first_seen, x.last_seen,
       pg_catalog.dense_rank() OVER (ORDER BY x.tree_start, x.root_pid, x.ep)::pg_catalog.int4,
       x.lock, x.lock_mode, x.blocker_lock_modes
  FROM (SELECT rt.root AS root_pid, 0 AS depth, rt.root AS pid,
               NULL::pg_catalog.int4[] AS blocked_by,
               own.usename,
               coalesce(own.state,
                        (SELECT p.state FROM parts p
                          WHERE p.kind OPERATOR(pg_catalog.=) 's'
                            AND p.pid OPERATOR(pg_catalog.=) rt.root
                            AND p.state IS NOT NULL
                            AND p.first_time OPERATOR(pg_catalog.<=) rt.last_seen
                          ORDER BY p.last_time DESC LIMIT 1)) AS state,
               own.wait, own.query, rt.samples, rt.sessions, rt.depth AS levels,
               rt.db_time, rt.db_time AS root_db_time, own.application_name,
               own.client_addr, own.xact_start, rt.first_seen, rt.last_seen,
               rt.first_seen AS tree_start, rt.episode AS ep,
               NULL::pg_catalog.text AS lock, NULL::pg_catalog.text AS lock_mode,
               NULL::pg_catalog.text AS blocker_lock_modes
          FROM rt
          LEFT JOIN LATERAL (SELECT p.usename, p.state,
                                    pgsentinel_dimension_key('wait_event'::pg_catalog.text, p.wait_event_type,
                                        p.wait_event, NULL::pg_catalog.int8, NULL::pg_catalog.int4, NULL::pg_catalog.text,
                                        NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.text) AS wait,
                                    p.query, p.application_name, p.client_addr, p.xact_start
                               FROM parts p
                              WHERE p.kind OPERATOR(pg_catalog.=) 'o'
                                AND p.pid OPERATOR(pg_catalog.=) rt.root
                                AND p.first_time OPERATOR(pg_catalog.<=) rt.last_seen
                              ORDER BY p.last_time DESC LIMIT 1) own ON true
        UNION ALL
        SELECT w.root, w.depth, w.pid, wb.blocked_by, w.usename, w.state, w.wait,
               w.query, w.samples, NULL, NULL, w.db_time, rt.db_time,
               w.application_name, w.client_addr, w.xact_start, w.first_seen,
               w.last_seen, rt.first_seen, rt.episode, w.lock, w.lock_mode,
               w.blocker_lock_modes
          FROM w JOIN rt ON rt.root OPERATOR(pg_catalog.=) w.root
                        AND rt.episode OPERATOR(pg_catalog.=) w.episode
          LEFT JOIN wb ON wb.root OPERATOR(pg_catalog.=) w.root
                      AND wb.episode OPERATOR(pg_catalog.=) w.episode
                      AND wb.pid OPERATOR(pg_catalog.=) w.pid) x
 ORDER BY x.root_db_time DESC, x.root_pid, x.ep, x.depth, x.db_time DESC, x.pid;
END;

-- Two periods compared by a dimension: the aas of each value in each
-- period (its DB time over the seconds that period observed), the
-- difference and its share of all the differences, with each period's
-- coverage.  The first row, total, has key NULL (a value's row may too:
-- rows hidden from the caller have no wait class).  A period the sampler
-- did not see has no aas and no difference: nothing is compared with
-- missing data.
CREATE FUNCTION pgsentinel_compare(
    since_1 timestamptz,
    until_1 timestamptz,
    since_2 timestamptz,
    until_2 timestamptz,
    dimension text DEFAULT 'wait_class',
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
    total boolean,
    aas_1 double precision,
    aas_2 double precision,
    diff double precision,
    pct_of_change double precision,
    coverage_1 double precision,
    coverage_2 double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH o AS (
    SELECT (SELECT coalesce(pg_catalog.sum(s.observed), 0::pg_catalog.float8)
              FROM pgsentinel_observed(since_1, until_1, 'hour'::pg_catalog.text, server) s) AS obs_1,
           (SELECT coalesce(pg_catalog.sum(s.observed), 0::pg_catalog.float8)
              FROM pgsentinel_observed(since_2, until_2, 'hour'::pg_catalog.text, server) s) AS obs_2,
           pgsentinel_window_seconds(since_1, until_1) AS secs_1,
           pgsentinel_window_seconds(since_2, until_2) AS secs_2
     WHERE pgsentinel_dimension(dimension) IS NOT NULL
       AND pgsentinel_check_request(since_1, until_1, NULL::pg_catalog.int4, NULL::pg_catalog.int4,
                                    dbname, username, wait_class, server)
       AND pgsentinel_check_request(since_2, until_2, NULL::pg_catalog.int4, NULL::pg_catalog.int4,
                                    dbname, username, wait_class, server)
), r AS (
    SELECT 1 AS period,
           pgsentinel_dimension_key(dimension, h.wait_event_type, h.wait_event,
               h.queryid, h.pid, h.datname, h.usename, h.application_name,
               h.client_addr, h.backend_type) AS key, h.db_time AS weight
      FROM pgsentinel_load(since_1, until_1, 'hour'::pg_catalog.text, dimension, dbname,
                           username, application, client, backend, query_id,
                           wait_class, event, session_pid, server) h
    UNION ALL
    SELECT 2,
           pgsentinel_dimension_key(dimension, h.wait_event_type, h.wait_event,
               h.queryid, h.pid, h.datname, h.usename, h.application_name,
               h.client_addr, h.backend_type), h.db_time
      FROM pgsentinel_load(since_2, until_2, 'hour'::pg_catalog.text, dimension, dbname,
                           username, application, client, backend, query_id,
                           wait_class, event, session_pid, server) h
), k AS (
    SELECT false AS total, r.key,
           coalesce(pg_catalog.sum(r.weight) FILTER (WHERE r.period OPERATOR(pg_catalog.=) 1),
                    0::pg_catalog.float8) AS t_1,
           coalesce(pg_catalog.sum(r.weight) FILTER (WHERE r.period OPERATOR(pg_catalog.=) 2),
                    0::pg_catalog.float8) AS t_2
      FROM r GROUP BY r.key
    UNION ALL
    SELECT true, NULL,
           coalesce(pg_catalog.sum(r.weight) FILTER (WHERE r.period OPERATOR(pg_catalog.=) 1),
                    0::pg_catalog.float8),
           coalesce(pg_catalog.sum(r.weight) FILTER (WHERE r.period OPERATOR(pg_catalog.=) 2),
                    0::pg_catalog.float8)
      FROM r
), a AS (
    SELECT k.total, k.key,
           k.t_1 OPERATOR(pg_catalog./) NULLIF(o.obs_1, 0::pg_catalog.float8) AS aas_1,
           k.t_2 OPERATOR(pg_catalog./) NULLIF(o.obs_2, 0::pg_catalog.float8) AS aas_2,
           o.obs_1 OPERATOR(pg_catalog./) o.secs_1 AS coverage_1,
           o.obs_2 OPERATOR(pg_catalog./) o.secs_2 AS coverage_2
      FROM k CROSS JOIN o
)
SELECT a.key, a.total, a.aas_1, a.aas_2,
       a.aas_2 OPERATOR(pg_catalog.-) a.aas_1,
       CASE WHEN NOT a.total THEN
           100::pg_catalog.float8 OPERATOR(pg_catalog.*) (a.aas_2 OPERATOR(pg_catalog.-) a.aas_1)
           OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(pg_catalog.abs(a.aas_2 OPERATOR(pg_catalog.-) a.aas_1))
                                         FILTER (WHERE NOT a.total) OVER (), 0::pg_catalog.float8)
       END,
       a.coverage_1, a.coverage_2
  FROM a
 ORDER BY a.total DESC,
          pg_catalog.abs(a.aas_2 OPERATOR(pg_catalog.-) a.aas_1) DESC NULLS LAST,
          greatest(a.aas_1, a.aas_2) DESC NULLS LAST, a.key;
END;
