
-- The fleet as the repository shows it (docs/fleet.md): its servers and
-- their state, their samples and rows (as pgsentinel_sample_archive and
-- pgsentinel_ash_archive show one server's), and the fleet reports.  The
-- rows come from other servers, whose roles mean nothing here: they are
-- shown whole, to superusers and pg_read_all_stats only.

-- A server's newest sample in the repository (before a time), or NULL
-- when its partitions are on a repository node that does not answer: the
-- other servers are still shown (a plain subquery over the fleet's
-- samples, planned before it knows the server, opens the partitions of
-- every server, on every node).
CREATE FUNCTION pgsentinel_fleet_newest_sample(server integer,
                                               before timestamptz DEFAULT 'infinity')
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    newest timestamptz;
BEGIN
    -- the last sample of the batches that end before, or of the one that
    -- spans before
    -- (batches by their first time, newest first: the primary key)
    EXECUTE format('SELECT greatest((SELECT x.last_time FROM %1$I.pgsentinel_fleet_batch x
                                      WHERE x.server_id = $1 AND x.first_time < $2
                                        AND x.last_time < $2
                                      ORDER BY x.first_time DESC LIMIT 1),
                                    (SELECT max(y.sample_time) FROM %1$I.pgsentinel_fleet_sample_archive y
                                      WHERE y.server_id = $1 AND y.batch_start < $2
                                        AND y.batch_start >= date_trunc(''day'', $2, ''UTC'')
                                        AND y.batch_end >= $2 AND y.sample_time < $2))',
                   (pg_catalog.parse_ident('@extschema@'))[1])
        INTO newest USING server, before;
    RETURN newest;
EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception THEN
    RETURN NULL;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_newest_sample(integer, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgsentinel_fleet_newest_sample(integer, timestamptz) TO pg_read_all_stats;

-- Reads pgsentinel_fleet_server, each server's newest sample and its subscription's state.
CREATE VIEW pgsentinel_fleet_status AS
SELECT f.server_id, f.name, f.method, f.conninfo, f.system_identifier,
       f.remote_version, f.subscription, f.foreign_server, f.keep_one_in,
       f.pull_interval, f.retention, f.added, f.removed,
       pgsentinel_fleet_newest_sample(f.server_id) AS last_sample_time,
       f.last_pull, f.last_error,
       (SELECT pg_catalog.bool_or(p.pid IS NOT NULL) FROM pg_catalog.pg_stat_subscription p
         WHERE p.subid OPERATOR(pg_catalog.=) f.feed::pg_catalog.oid
           AND f.method OPERATOR(pg_catalog.=) 'logical') AS receiving,
       f.rolled_until, f.node, f.hours_rolled_until
  FROM pgsentinel_fleet_server f;

-- (batch_start, batch_end: as in pgsentinel_archive_samples_by_batch)
CREATE VIEW pgsentinel_fleet_sample_archive AS
SELECT f.name AS server, b.server_id, b.first_time AS batch_start,
       b.last_time AS batch_end,
       pgsentinel_us_after(b.first_time, x.us) AS sample_time, x.sample_id,
       x.sample_period, x.weight, x.active_sessions
  FROM pgsentinel_fleet_batch b
  JOIN pgsentinel_fleet_server f ON f.server_id OPERATOR(pg_catalog.=) b.server_id
 CROSS JOIN LATERAL pgsentinel_batch_samples(b.sample_data) a
 CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(a.sample_ids),
                               pg_catalog.unnest(a.sample_us),
                               pg_catalog.unnest(a.sample_periods),
                               pg_catalog.unnest(a.weights),
                               pg_catalog.unnest(a.active_sessions))
       AS x(sample_id, us, sample_period, weight, active_sessions);

-- A batch's rows are read with the batch, then joined to their sessions,
-- waits and texts by key (as pgsentinel_archive_rows_by_batch), on the batch's
-- server_id and feed (b's, not the subquery's u: the planner carries a
-- filter on server_id to the joined tables only from b), so that a filter on
-- server_id prunes every joined table's partitions when planned: a server's
-- rows never reach another repository node's foreign partitions.
CREATE VIEW pgsentinel_fleet_ash AS
SELECT f.name AS server, b.server_id, u.sample_time AS ash_time, u.sample_id,
       se.datid, se.datname, se.pid, se.leader_pid, se.usesysid, se.usename,
       se.application_name, se.client_addr, se.client_hostname, se.client_port,
       se.backend_start, u.xact_start, u.query_start, u.state_change,
       w.wait_event_type, w.wait_event, u.state, u.backend_xid, u.backend_xmin,
       pgsentinel_text_fill(tt.text, u.top_level_query_values) AS top_level_query,
       pgsentinel_text_fill(qt.text, u.query_values) AS query, u.cmdtype, u.queryid,
       u.nested_queryid, se.backend_type, coalesce(u.blockers, 0) AS blockers,
       u.blockerpid, u.blocker_state,
       coalesce(u.blocking_pids, '{}')::pg_catalog.int4[] AS blocking_pids,
       u.sample_period, pgsentinel_load_weight(u.state, u.sweight) AS weight,
       u.blocker_usesysid, u.blocked_sample, b.first_time AS batch_start,
       u.lock_type, u.lock_relation, u.lock_target, u.lock_mode,
       u.blocker_lock_modes
  FROM pgsentinel_fleet_batch b
  JOIN pgsentinel_fleet_server f ON f.server_id OPERATOR(pg_catalog.=) b.server_id
 CROSS JOIN LATERAL (
       SELECT pg_catalog.timezone('UTC', b.first_time)::pg_catalog.date AS day, x.*
         FROM pgsentinel_batch_samples(b.sample_data) a,
              pgsentinel_batch_rows(b.first_time, a.sample_ids, a.sample_us,
                  a.sample_periods, a.weights, a.sample_blocked, b.row_data) x
       OFFSET 0) u
  JOIN pgsentinel_fleet_session se
    ON se.server_id OPERATOR(pg_catalog.=) b.server_id
   AND se.feed OPERATOR(pg_catalog.=) b.feed
   AND se.day OPERATOR(pg_catalog.=) u.day
   AND se.session_id OPERATOR(pg_catalog.=) u.session_id
  LEFT JOIN pgsentinel_fleet_wait_event w
    ON w.server_id OPERATOR(pg_catalog.=) b.server_id
   AND w.feed OPERATOR(pg_catalog.=) b.feed
   AND w.wait_event_id OPERATOR(pg_catalog.=) u.wait_event_id
  LEFT JOIN pgsentinel_fleet_text tt
    ON tt.server_id OPERATOR(pg_catalog.=) b.server_id
   AND tt.feed OPERATOR(pg_catalog.=) b.feed
   AND tt.day OPERATOR(pg_catalog.=) u.day
   AND tt.text_id OPERATOR(pg_catalog.=) u.top_level_query_id
  LEFT JOIN pgsentinel_fleet_text qt
    ON qt.server_id OPERATOR(pg_catalog.=) b.server_id
   AND qt.feed OPERATOR(pg_catalog.=) b.feed
   AND qt.day OPERATOR(pg_catalog.=) u.day
   AND qt.text_id OPERATOR(pg_catalog.=) u.query_id;

-- The statements of every server's rows, with their top-level text, as
-- pgsentinel_activity_archive shows this server's (whole).
CREATE VIEW pgsentinel_fleet_activity_archive AS
SELECT a.server, a.server_id, NULL::pg_catalog.int8 AS feed,
       pg_catalog.timezone('UTC', a.batch_start)::pg_catalog.date AS day,
       a.sample_id AS activity_id, a.datname, a.usesysid, a.usename,
       a.application_name, a.queryid, a.query_start, a.top_level_query,
       a.batch_start
  FROM pgsentinel_fleet_ash a;

-- The statements history of every server, as pgsentinel_statements_archive
-- shows one server's (the deltas of each reading whose counters moved,
-- NULL counters on a reset interval), with the statement's text of the
-- day, from the feed that brought the delta.  Whole rows: the userids are
-- the source's.  query is NULL when the statement has no text; written
-- so that a filter on it keeps the texts' joins outer, made after the
-- statement's row was found: reduced to inner joins, the planner may join
-- the day's texts to the deltas by server and day alone first (the
-- estimates of a node's foreign partitions are guesses), a product of
-- both.  batch_start, batch_end: as in pgsentinel_statements_archive.
CREATE VIEW pgsentinel_fleet_statements AS
SELECT f.name AS server, d.server_id, d.ash_time, d.prev_ash_time,
       d.sample_id, d.userid, d.dbid, d.queryid, d.toplevel,
       extract(epoch FROM d.ash_time OPERATOR(pg_catalog.-) d.prev_ash_time)::pg_catalog.float8 AS seconds,
       d.reset,
       CASE WHEN NOT d.reset THEN coalesce(d.calls, 0) END AS calls,
       CASE WHEN NOT d.reset THEN coalesce(d.rows, 0) END AS rows,
       CASE WHEN NOT d.reset THEN coalesce(d.exec_ms, 0) END AS exec_ms,
       CASE WHEN NOT d.reset THEN coalesce(d.plans, 0) END AS plans,
       CASE WHEN NOT d.reset THEN coalesce(d.plan_ms, 0) END AS plan_ms,
       CASE WHEN NOT d.reset THEN coalesce(d.shared_blks_hit, 0) END AS shared_blks_hit,
       CASE WHEN NOT d.reset THEN coalesce(d.shared_blks_read, 0) END AS shared_blks_read,
       CASE WHEN NOT d.reset THEN coalesce(d.shared_blks_dirtied, 0) END AS shared_blks_dirtied,
       CASE WHEN NOT d.reset THEN coalesce(d.shared_blks_written, 0) END AS shared_blks_written,
       CASE WHEN NOT d.reset THEN coalesce(d.temp_blks_read, 0) END AS temp_blks_read,
       CASE WHEN NOT d.reset THEN coalesce(d.temp_blks_written, 0) END AS temp_blks_written,
       CASE WHEN NOT d.reset THEN coalesce(d.wal_bytes, 0)::pg_catalog.numeric END AS wal_bytes,
       CASE WHEN m.text_id IS NOT NULL THEN t.text END AS query,
       d.batch_start, d.batch_end
  FROM pgsentinel_fleet_statement_delta d
  JOIN pgsentinel_fleet_server f ON f.server_id OPERATOR(pg_catalog.=) d.server_id
  LEFT JOIN pgsentinel_fleet_statement_text m
    ON m.server_id OPERATOR(pg_catalog.=) d.server_id
   AND m.feed OPERATOR(pg_catalog.=) d.feed
   AND m.day OPERATOR(pg_catalog.=) pg_catalog.timezone('UTC', d.ash_time)::pg_catalog.date
   AND m.queryid OPERATOR(pg_catalog.=) d.queryid
   AND m.dbid OPERATOR(pg_catalog.=) d.dbid
   AND m.userid OPERATOR(pg_catalog.=) d.userid
  LEFT JOIN pgsentinel_fleet_text t
    ON t.server_id OPERATOR(pg_catalog.=) m.server_id
   AND t.feed OPERATOR(pg_catalog.=) m.feed
   AND t.day OPERATOR(pg_catalog.=) m.day
   AND t.text_id OPERATOR(pg_catalog.=) m.text_id;

REVOKE ALL ON pgsentinel_fleet_status, pgsentinel_fleet_sample_archive,
    pgsentinel_fleet_ash, pgsentinel_fleet_activity_archive,
    pgsentinel_fleet_statements FROM PUBLIC;
GRANT SELECT ON pgsentinel_fleet_status, pgsentinel_fleet_sample_archive,
    pgsentinel_fleet_ash, pgsentinel_fleet_activity_archive,
    pgsentinel_fleet_statements TO pg_read_all_stats;

-- Average active sessions per server over time: one row per server and
-- bucket (bucket NULL: one bucket, the whole window), as pgsentinel_aas
-- computes it for one server: DB time (sum of the rows' weights) over the
-- seconds observed (sum of the samples' weights); NULL where the
-- repository holds no sample of the server.  server: one server, or all.
-- Each server is read as its reports read it (pgsentinel_load(),
-- pgsentinel_observed() with server =>): whole hours and minutes from its
-- rollups where the buckets are made of them, the rest from its rows.
CREATE FUNCTION pgsentinel_fleet_aas(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    bucket interval DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS TABLE (
    server text,
    bucket_start timestamptz,
    db_time double precision,
    aas double precision,
    observed double precision,
    coverage double precision)
LANGUAGE sql STABLE
-- (each server's rollups and rows are read by plpgsql functions, which the
-- planner counts at a thousand rows a call: the plan's cost over many
-- servers would make JIT compile it for seconds)
SET jit = off
BEGIN ATOMIC
WITH p0 AS (
    SELECT coalesce(bucket, until OPERATOR(pg_catalog.-) since) AS step,
           CASE WHEN bucket IS NULL THEN since
                ELSE timestamptz '2000-01-01 00:00:00+00' END AS origin
     WHERE pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
), p AS (
    -- one bucket over the window may read every rollup of it; buckets of
    -- whole hours (minutes) on the hour, the hourly (minute) ones
    SELECT p0.step, p0.origin,
           CASE WHEN bucket IS NULL THEN 'hour'
                WHEN extract(epoch FROM p0.step) OPERATOR(pg_catalog.%) 3600::pg_catalog.numeric
                     OPERATOR(pg_catalog.=) 0::pg_catalog.numeric THEN 'hour'
                WHEN extract(epoch FROM p0.step) OPERATOR(pg_catalog.%) 60::pg_catalog.numeric
                     OPERATOR(pg_catalog.=) 0::pg_catalog.numeric THEN 'minute'
           END AS grain
      FROM p0
), b AS (
    SELECT g.bucket_start, g.secs
      FROM p, pgsentinel_buckets(since, until, p.step, p.origin) g
), srv AS (
    SELECT f.server_id, f.name FROM pgsentinel_fleet_status f
     WHERE (pgsentinel_fleet_aas.server IS NULL
            OR f.name OPERATOR(pg_catalog.=) pgsentinel_fleet_aas.server)
       AND (f.removed IS NULL
            OR pgsentinel_fleet_newest_sample(f.server_id, until) OPERATOR(pg_catalog.>=) since)
), obs AS (
    SELECT srv.server_id, pg_catalog.date_bin(p.step, x.t, p.origin) AS bucket_start,
           pg_catalog.sum(x.observed) AS observed
      FROM p, srv CROSS JOIN LATERAL pgsentinel_observed(since, until, p.grain, srv.name) x
     GROUP BY 1, 2
), r AS (
    SELECT srv.server_id, pg_catalog.date_bin(p.step, h.t, p.origin) AS bucket_start,
           pg_catalog.sum(h.db_time) AS db_time
      FROM p, srv CROSS JOIN LATERAL pgsentinel_load(since, until, p.grain,
                                                     NULL::pg_catalog.text, server => srv.name) h
     GROUP BY 1, 2
)
SELECT srv.name, b.bucket_start,
       coalesce(r.db_time, 0::pg_catalog.float8),
       coalesce(r.db_time, 0::pg_catalog.float8)
           OPERATOR(pg_catalog./) NULLIF(o.observed, 0::pg_catalog.float8),
       coalesce(o.observed, 0::pg_catalog.float8),
       least(coalesce(o.observed, 0::pg_catalog.float8) OPERATOR(pg_catalog./) b.secs,
             1::pg_catalog.float8)
  FROM srv CROSS JOIN b
  LEFT JOIN obs o ON o.server_id OPERATOR(pg_catalog.=) srv.server_id
                 AND o.bucket_start OPERATOR(pg_catalog.=) b.bucket_start
  LEFT JOIN r ON r.server_id OPERATOR(pg_catalog.=) srv.server_id
             AND r.bucket_start OPERATOR(pg_catalog.=) b.bucket_start
 ORDER BY 1, 2;
END;

-- The servers with the most DB time over a window, with their average
-- active sessions and the wait class that took most of their time.
CREATE FUNCTION pgsentinel_fleet_top_servers(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    top_n integer DEFAULT 10)
RETURNS TABLE (
    rank bigint,
    server text,
    db_time double precision,
    aas double precision,
    pct double precision,
    top_wait_class text,
    top_wait_class_pct double precision)
LANGUAGE sql STABLE
-- (each server's rollups and rows are read by plpgsql functions, which the
-- planner counts at a thousand rows a call: the plan's cost over many
-- servers would make JIT compile it for seconds)
SET jit = off
BEGIN ATOMIC
WITH a AS (
    SELECT x.server, x.db_time, x.aas FROM pgsentinel_fleet_aas(since, until) x
), w AS (
    SELECT a.server, h.wait_event_type, pg_catalog.sum(h.db_time) AS db_time,
           pg_catalog.row_number() OVER (PARTITION BY a.server
                                         ORDER BY pg_catalog.sum(h.db_time) DESC,
                                                  h.wait_event_type) AS n
      FROM a CROSS JOIN LATERAL pgsentinel_load(since, until, 'hour'::pg_catalog.text,
                                                'wait_class'::pg_catalog.text,
                                                server => a.server) h
     GROUP BY 1, 2
), ranked AS (
    SELECT pg_catalog.row_number() OVER (ORDER BY a.db_time DESC, a.server) AS rank,
           a.server, a.db_time, a.aas,
           100::pg_catalog.float8 OPERATOR(pg_catalog.*) a.db_time
               OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(a.db_time) OVER (), 0::pg_catalog.float8) AS pct,
           w.wait_event_type,
           100::pg_catalog.float8 OPERATOR(pg_catalog.*) w.db_time
               OPERATOR(pg_catalog./) NULLIF(a.db_time, 0::pg_catalog.float8) AS wpct
      FROM a LEFT JOIN w ON w.server OPERATOR(pg_catalog.=) a.server
                        AND w.n OPERATOR(pg_catalog.=) 1::pg_catalog.int8
)
SELECT ranked.rank, ranked.server, ranked.db_time, ranked.aas, ranked.pct,
       ranked.wait_event_type, ranked.wpct
  FROM ranked
 WHERE ranked.rank OPERATOR(pg_catalog.<=) top_n::pg_catalog.int8
 ORDER BY ranked.rank;
END;

-- The statements with the most DB time across the fleet (or on one
-- server), by query id and text (query ids differ between databases and
-- servers for the same text), with the servers they ran on; then, from
-- the statements history of those servers (top-level executions of the
-- query id, the readings between two times in the window, as
-- pgsentinel_top counts them), their calls and milliseconds per call:
-- NULL where the repository has no reading of the statement.
CREATE FUNCTION pgsentinel_fleet_top_statements(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    server text DEFAULT NULL,
    top_n integer DEFAULT 10)
RETURNS TABLE (
    rank bigint,
    queryid bigint,
    query text,
    db_time double precision,
    pct double precision,
    servers text[],
    calls bigint,
    ms_per_call double precision)
LANGUAGE sql STABLE
-- (without JIT, as pgsentinel_fleet_aas)
SET jit = off
BEGIN ATOMIC
WITH r AS (
    -- each server's rows read as its reports read them
    SELECT h.queryid, h.query, pg_catalog.sum(h.weight) AS db_time,
           pg_catalog.array_agg(DISTINCT f.name) AS servers
      FROM pgsentinel_fleet_status f
     CROSS JOIN LATERAL pgsentinel_fleet_rows(f.name, since, until) h
     WHERE NOT pgsentinel_own_worker(h.backend_type)
       AND pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
       AND (pgsentinel_fleet_top_statements.server IS NULL
            OR f.name OPERATOR(pg_catalog.=) pgsentinel_fleet_top_statements.server)
     GROUP BY 1, 2
), ranked AS (
    SELECT pg_catalog.row_number() OVER (ORDER BY r.db_time DESC, r.queryid, r.query) AS rank,
           r.queryid, r.query, r.db_time,
           100::pg_catalog.float8 OPERATOR(pg_catalog.*) r.db_time
               OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(r.db_time) OVER (), 0::pg_catalog.float8) AS pct,
           r.servers
      FROM r
), st AS (
    -- each server's statements history read on its own (on its node)
    SELECT f.name AS server, d.queryid, pg_catalog.sum(d.calls) AS calls,
           pg_catalog.sum(d.exec_ms) AS exec_ms
      FROM pgsentinel_fleet_status f
     CROSS JOIN LATERAL pgsentinel_fleet_statements_in(f.name, since, until) d
     WHERE d.toplevel AND NOT d.reset
       AND (pgsentinel_fleet_top_statements.server IS NULL
            OR f.name OPERATOR(pg_catalog.=) pgsentinel_fleet_top_statements.server)
       AND d.queryid OPERATOR(pg_catalog.=) ANY (
               SELECT ranked.queryid FROM ranked
                WHERE ranked.rank OPERATOR(pg_catalog.<=) top_n::pg_catalog.int8)
     GROUP BY 1, 2
)
SELECT ranked.rank, ranked.queryid, ranked.query, ranked.db_time, ranked.pct, ranked.servers,
       x.calls::pg_catalog.int8,
       x.exec_ms OPERATOR(pg_catalog./) NULLIF(x.calls, 0::pg_catalog.numeric)::pg_catalog.float8
  FROM ranked
  LEFT JOIN LATERAL (
    SELECT pg_catalog.sum(st.calls) AS calls, pg_catalog.sum(st.exec_ms) AS exec_ms
      FROM st
     WHERE st.queryid OPERATOR(pg_catalog.=) ranked.queryid
       AND st.server OPERATOR(pg_catalog.=) ANY (ranked.servers)) x ON true
 WHERE ranked.rank OPERATOR(pg_catalog.<=) top_n::pg_catalog.int8
 ORDER BY ranked.rank;
END;

REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_aas(timestamptz, timestamptz, interval, text),
    pgsentinel_fleet_top_servers(timestamptz, timestamptz, integer),
    pgsentinel_fleet_top_statements(timestamptz, timestamptz, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgsentinel_fleet_aas(timestamptz, timestamptz, interval, text),
    pgsentinel_fleet_top_servers(timestamptz, timestamptz, integer),
    pgsentinel_fleet_top_statements(timestamptz, timestamptz, text, integer) TO pg_read_all_stats;
