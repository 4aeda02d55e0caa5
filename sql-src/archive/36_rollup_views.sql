
-- The rollups as the history views show rows (docs/archive.md): the time
-- per minute and per hour (pgsentinel_ash_minute, pgsentinel_ash_hour), of
-- each session (pgsentinel_ash_session_minute, _hour: its client hidden
-- too) and
-- the time observed (pgsentinel_sample_minute, pgsentinel_sample_hour).  Of
-- the time of a role the caller is not a member of (without
-- pg_read_all_stats) they hide what pgsentinel_ash_archive hides of its
-- rows: the wait, the query id and the backend type; the database, the
-- role and the application stay, as in pg_stat_activity.  That time is
-- one row a bucket under what stays (a session's: one row a bucket), so
-- that how it splits is not shown either.  The reports read them for the
-- whole minutes and hours of a window that the archive holds
-- (40_reports_core.sql).  Whether the caller has pg_read_all_stats is
-- asked once a query (a scalar subquery, here as in the rows' views):
-- asked for every row it took half the time of a day's minutes.

-- Reads pgsentinel_rollup_minute.
CREATE VIEW pgsentinel_ash_minute AS
SELECT r.bucket, r.datname, r.usesysid, r.usename, r.application_name,
       CASE WHEN v.visible THEN r.backend_type END AS backend_type,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       CASE WHEN v.visible THEN r.queryid END AS queryid,
       pg_catalog.sum(r.db_time) AS db_time, pg_catalog.sum(r.rows)::bigint AS rows
  FROM pgsentinel_rollup_minute r
 CROSS JOIN LATERAL (SELECT (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;

-- Reads pgsentinel_rollup_hour.
CREATE VIEW pgsentinel_ash_hour AS
SELECT r.bucket, r.datname, r.usesysid, r.usename, r.application_name,
       CASE WHEN v.visible THEN r.backend_type END AS backend_type,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       CASE WHEN v.visible THEN r.queryid END AS queryid,
       pg_catalog.sum(r.db_time) AS db_time, pg_catalog.sum(r.rows)::bigint AS rows
  FROM pgsentinel_rollup_hour r
 CROSS JOIN LATERAL (SELECT (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;

-- Reads pgsentinel_rollup_session_hour (the next, pgsentinel_rollup_session_minute).
CREATE VIEW pgsentinel_ash_session_hour AS
SELECT r.bucket, r.pid, r.datname, r.usesysid, r.usename, r.application_name,
       CASE WHEN v.visible THEN r.client_addr END AS client_addr,
       CASE WHEN v.visible THEN r.backend_type END AS backend_type,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       pg_catalog.sum(r.db_time) AS db_time, pg_catalog.sum(r.rows)::bigint AS rows,
       pg_catalog.max(r.last_time) AS last_time
  FROM pgsentinel_rollup_session_hour r
 CROSS JOIN LATERAL (SELECT (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;

-- Reads pgsentinel_rollup_session_minute (the session minutes, as the view above the hours).
CREATE VIEW pgsentinel_ash_session_minute AS
SELECT r.bucket, r.pid, r.datname, r.usesysid, r.usename, r.application_name,
       CASE WHEN v.visible THEN r.client_addr END AS client_addr,
       CASE WHEN v.visible THEN r.backend_type END AS backend_type,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       pg_catalog.sum(r.db_time) AS db_time, pg_catalog.sum(r.rows)::bigint AS rows,
       pg_catalog.max(r.last_time) AS last_time
  FROM pgsentinel_rollup_session_minute r
 CROSS JOIN LATERAL (SELECT (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;

-- The lock a row waited for, in words (pgsentinel_ash's lock columns):
-- "public.t", "tuple (3,7) of public.t", "transaction 1234", "advisory
-- 42".  A relation is named only in its own database (datname, NULL for
-- another server's row): elsewhere its OID could name anything
-- ("relation 16384").  NULL: no lock.
CREATE FUNCTION pgsentinel_lock_name(lock_type text, lock_relation oid,
                                     lock_target text, datname text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT CASE WHEN lock_type IS NULL THEN NULL
            WHEN lock_relation IS NULL THEN coalesce(lock_target, lock_type)
            ELSE pg_catalog.concat_ws(' of ',
                     CASE WHEN lock_type OPERATOR(pg_catalog.=) 'relation' THEN NULL
                          WHEN lock_type OPERATOR(pg_catalog.=) 'extend' THEN 'extension'
                          ELSE lock_target END,
                     coalesce((SELECT pg_catalog.quote_ident(n.nspname)
                                      OPERATOR(pg_catalog.||) '.'
                                      OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname)
                                 FROM pg_catalog.pg_class c
                                 JOIN pg_catalog.pg_namespace n
                                   ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                                WHERE c.oid OPERATOR(pg_catalog.=) lock_relation
                                  AND datname OPERATOR(pg_catalog.=) pg_catalog.current_database()::pg_catalog.text),
                              'relation ' OPERATOR(pg_catalog.||) lock_relation::pg_catalog.text))
       END;
END;

-- The blocking trees of some samples, by unit ('hour' or 'minute'), in
-- parts that add up over buckets (the archiver keeps them in
-- pgsentinel_rollup_blocking_hour and _minute; the
-- reports compute them from rows too, pgsentinel_blocking_trees()).  rows:
-- a JSON array with every row of the samples in which somebody waited, as
-- objects of the keys ash_time, sample_id, pid, weight, usesysid, usename,
-- application_name, client_addr, xact_start, state, wait_event_type,
-- wait_event, query, blocking (the pids it waited for), blockerpid,
-- blocker_state, blocker_usesysid, lock (pgsentinel_lock_name()),
-- lock_mode and blocker_lock_modes.  The parts are rows of the rollup
-- tables' shape; first_time is the first sample of a part, last_time the
-- last, whose names the part gives.  In each sample a session waits behind
-- every pid it waited for; a root is a blocker that was not itself waiting in that
-- sample, and every session is behind a root once, at its shallowest
-- level.  Per bucket:
--   'b' (root_pid, pid): a session behind a root: its deepest level, the
--       pids it waited for, the samples and time it spent there, and its
--       names, state, wait, statement and lock at the last of them;
--   'r' (root_pid): a root: the samples it was one in;
--   'o' (pid): a root's own row: its names, state and statement at the
--       last sample in which it was a root (sampled whatever its state);
--   's' (pid, key_usesysid): a blocker as its waiters saw it (its role's
--       id, of which its state's visibility depends): its last state.
CREATE FUNCTION pgsentinel_blocking_parts(rows jsonb, unit text)
RETURNS SETOF pgsentinel_rollup_blocking_hour
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
WITH RECURSIVE h AS MATERIALIZED (
    SELECT r.ash_time, r.sample_id, r.pid, r.weight, r.usesysid, r.usename,
           r.state, r.wait_event_type, r.wait_event, r.query, r.blocking,
           r.blockerpid, r.blocker_state, r.blocker_usesysid,
           r.application_name, r.client_addr, r.xact_start, r.lock, r.lock_mode,
           r.blocker_lock_modes,
           pg_catalog.date_trunc(unit, r.ash_time, 'UTC') AS bucket
      FROM pg_catalog.jsonb_to_recordset(rows) AS r(
               ash_time timestamptz, sample_id bigint, pid integer,
               weight double precision, usesysid oid, usename text, state text,
               wait_event_type text, wait_event text, query text,
               blocking integer[], blockerpid integer, blocker_state text,
               blocker_usesysid oid, application_name text, client_addr text,
               xact_start timestamptz, lock text, lock_mode text,
               blocker_lock_modes text)
), e AS MATERIALIZED (
    SELECT DISTINCT h.ash_time, h.sample_id, h.bucket, h.pid AS waiter, b.pid AS blocker
      FROM h CROSS JOIN LATERAL pg_catalog.unnest(h.blocking) AS b(pid)
), roots AS MATERIALIZED (
    SELECT DISTINCT e.ash_time, e.sample_id, e.bucket, e.blocker AS root
      FROM e
     WHERE NOT EXISTS (SELECT 1 FROM e e2
                        WHERE e2.ash_time OPERATOR(pg_catalog.=) e.ash_time
                          AND e2.sample_id OPERATOR(pg_catalog.=) e.sample_id
                          AND e2.waiter OPERATOR(pg_catalog.=) e.blocker)
), t(ash_time, sample_id, root, pid, depth, path) AS (
    SELECT r.ash_time, r.sample_id, r.root, r.root, 0, ARRAY[r.root] FROM roots r
    UNION ALL
    SELECT t.ash_time, t.sample_id, t.root, e.waiter,
           t.depth OPERATOR(pg_catalog.+) 1, pg_catalog.array_append(t.path, e.waiter)
      FROM t JOIN e
        ON e.ash_time OPERATOR(pg_catalog.=) t.ash_time
       AND e.sample_id OPERATOR(pg_catalog.=) t.sample_id
       AND e.blocker OPERATOR(pg_catalog.=) t.pid
     WHERE NOT e.waiter OPERATOR(pg_catalog.=) ANY (t.path)
), behind AS MATERIALIZED (
    SELECT t.ash_time, t.sample_id, t.root, t.pid, pg_catalog.min(t.depth) AS depth
      FROM t WHERE t.depth OPERATOR(pg_catalog.>) 0
     GROUP BY 1, 2, 3, 4
), wb AS (
    SELECT e.bucket, b.root, b.pid,
           pg_catalog.array_agg(DISTINCT e.blocker ORDER BY e.blocker) AS blocked_by
      FROM behind b JOIN e
        ON e.ash_time OPERATOR(pg_catalog.=) b.ash_time
       AND e.sample_id OPERATOR(pg_catalog.=) b.sample_id
       AND e.waiter OPERATOR(pg_catalog.=) b.pid
     GROUP BY 1, 2, 3
), w AS (
    SELECT h.bucket, b.root, b.pid, pg_catalog.max(b.depth) AS depth,
           pg_catalog.count(*) AS samples, pg_catalog.sum(h.weight) AS db_time,
           pg_catalog.max(h.ash_time) AS last_time,
           pg_catalog.min(h.ash_time) AS first_time,
           (pg_catalog.array_agg(h.application_name ORDER BY h.ash_time DESC))[1] AS application_name,
           (pg_catalog.array_agg(h.client_addr ORDER BY h.ash_time DESC))[1] AS client_addr,
           (pg_catalog.array_agg(h.xact_start ORDER BY h.ash_time DESC))[1] AS xact_start,
           (pg_catalog.array_agg(h.usesysid ORDER BY h.ash_time DESC))[1] AS usesysid,
           (pg_catalog.array_agg(h.usename ORDER BY h.ash_time DESC))[1] AS usename,
           (pg_catalog.array_agg(h.state ORDER BY h.ash_time DESC))[1] AS state,
           (pg_catalog.array_agg(h.wait_event_type ORDER BY h.ash_time DESC))[1] AS wait_event_type,
           (pg_catalog.array_agg(h.wait_event ORDER BY h.ash_time DESC))[1] AS wait_event,
           (pg_catalog.array_agg(h.query ORDER BY h.ash_time DESC))[1] AS query,
           (pg_catalog.array_agg(h.lock ORDER BY h.ash_time DESC))[1] AS lock,
           (pg_catalog.array_agg(h.lock_mode ORDER BY h.ash_time DESC))[1] AS lock_mode,
           (pg_catalog.array_agg(h.blocker_lock_modes ORDER BY h.ash_time DESC))[1] AS blocker_lock_modes
      FROM behind b JOIN h
        ON h.ash_time OPERATOR(pg_catalog.=) b.ash_time
       AND h.sample_id OPERATOR(pg_catalog.=) b.sample_id
       AND h.pid OPERATOR(pg_catalog.=) b.pid
     GROUP BY 1, 2, 3
)
SELECT w.bucket, 'b'::"char", w.root, w.pid, NULL::pg_catalog.oid, w.depth,
       wb.blocked_by, w.samples, w.db_time, w.last_time, w.usesysid, w.usename,
       w.state, w.wait_event_type, w.wait_event, w.query, w.first_time,
       w.application_name, w.client_addr, w.xact_start, w.lock, w.lock_mode,
       w.blocker_lock_modes
  FROM w LEFT JOIN wb
    ON wb.bucket OPERATOR(pg_catalog.=) w.bucket
   AND wb.root OPERATOR(pg_catalog.=) w.root
   AND wb.pid OPERATOR(pg_catalog.=) w.pid
UNION ALL
SELECT r.bucket, 'r', r.root, NULL, NULL, NULL, NULL, pg_catalog.count(*),
       0::pg_catalog.float8, pg_catalog.max(r.ash_time), NULL, NULL, NULL, NULL,
       NULL, NULL, pg_catalog.min(r.ash_time), NULL, NULL, NULL, NULL, NULL, NULL
  FROM roots r GROUP BY r.bucket, r.root
UNION ALL
SELECT h.bucket, 'o', NULL, h.pid, NULL, NULL, NULL, pg_catalog.count(*),
       pg_catalog.sum(h.weight), pg_catalog.max(h.ash_time),
       (pg_catalog.array_agg(h.usesysid ORDER BY h.ash_time DESC))[1],
       (pg_catalog.array_agg(h.usename ORDER BY h.ash_time DESC))[1],
       (pg_catalog.array_agg(h.state ORDER BY h.ash_time DESC))[1],
       (pg_catalog.array_agg(h.wait_event_type ORDER BY h.ash_time DESC))[1],
       (pg_catalog.array_agg(h.wait_event ORDER BY h.ash_time DESC))[1],
       (pg_catalog.array_agg(h.query ORDER BY h.ash_time DESC))[1],
       pg_catalog.min(h.ash_time),
       (pg_catalog.array_agg(h.application_name ORDER BY h.ash_time DESC))[1],
       (pg_catalog.array_agg(h.client_addr ORDER BY h.ash_time DESC))[1],
       (pg_catalog.array_agg(h.xact_start ORDER BY h.ash_time DESC))[1],
       NULL, NULL, NULL
  FROM h JOIN roots r
    ON r.ash_time OPERATOR(pg_catalog.=) h.ash_time
   AND r.sample_id OPERATOR(pg_catalog.=) h.sample_id
   AND r.root OPERATOR(pg_catalog.=) h.pid
 GROUP BY h.bucket, h.pid
UNION ALL
SELECT h.bucket, 's', NULL, h.blockerpid, h.blocker_usesysid, NULL, NULL,
       pg_catalog.count(*), 0::pg_catalog.float8, pg_catalog.max(h.ash_time),
       h.blocker_usesysid, NULL,
       (pg_catalog.array_agg(h.blocker_state ORDER BY h.ash_time DESC))[1],
       NULL, NULL, NULL, pg_catalog.min(h.ash_time), NULL, NULL, NULL, NULL,
       NULL, NULL
  FROM h WHERE h.blocker_state IS NOT NULL
 GROUP BY h.bucket, h.blockerpid, h.blocker_usesysid;
END;

-- Parts of blocking trees (pgsentinel_blocking_parts()) added up into
-- coarser buckets, by unit ('hour'): the archiver makes an hour's from its
-- minutes once the hour has ended.  Counts and times are summed, the
-- deepest level and every blocker kept, first_time the earliest, and the
-- names, state and statement those of the part with the latest last_time
-- (as when a bucket's part is added to the one kept).  parts: a JSON array
-- of the rows of pgsentinel_rollup_blocking_minute, as objects.
CREATE FUNCTION pgsentinel_blocking_merge(parts jsonb, unit text)
RETURNS SETOF pgsentinel_rollup_blocking_hour
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT pg_catalog.date_trunc(unit, p.bucket, 'UTC'::pg_catalog.text), p.kind,
       p.root_pid, p.pid, p.key_usesysid, pg_catalog.max(p.depth),
       (SELECT pg_catalog.array_agg(DISTINCT x.x ORDER BY x.x)
          FROM pg_catalog.unnest(pg_catalog.string_to_array(
                   pg_catalog.string_agg(
                       CASE WHEN pg_catalog.cardinality(p.blocked_by) OPERATOR(pg_catalog.>) 0
                            THEN pg_catalog.array_to_string(p.blocked_by, ',') END, ','),
                   ',')::pg_catalog.int4[]) x(x)),
       pg_catalog.sum(p.samples)::pg_catalog.int8, pg_catalog.sum(p.db_time),
       pg_catalog.max(p.last_time),
       (pg_catalog.array_agg(p.usesysid ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.usename ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.state ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.wait_event_type ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.wait_event ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.query ORDER BY p.last_time DESC, p.bucket DESC))[1],
       pg_catalog.min(p.first_time),
       (pg_catalog.array_agg(p.application_name ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.client_addr ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.xact_start ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.lock ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.lock_mode ORDER BY p.last_time DESC, p.bucket DESC))[1],
       (pg_catalog.array_agg(p.blocker_lock_modes ORDER BY p.last_time DESC, p.bucket DESC))[1]
  FROM pg_catalog.jsonb_populate_recordset(NULL::pgsentinel_rollup_blocking_minute, parts) p
 GROUP BY 1, 2, 3, 4, 5;
END;

-- The blocking rollup as the history shows rows: of a session of a role
-- the caller is not a member of its state, wait and statement hidden; of
-- a blocker, its state as pgsentinel_ash_archive shows blocker_state.
CREATE VIEW pgsentinel_blocking_hour AS
SELECT r.bucket, r.kind, r.root_pid, r.pid, r.key_usesysid, r.depth,
       r.blocked_by, r.samples, r.db_time, r.last_time, r.usesysid, r.usename,
       CASE WHEN v.visible THEN r.state END AS state,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       CASE WHEN v.visible THEN r.query ELSE '<insufficient privilege>' END AS query,
       r.first_time, r.application_name,
       CASE WHEN v.visible THEN r.client_addr END AS client_addr,
       CASE WHEN v.visible THEN r.xact_start END AS xact_start,
       r.lock, r.lock_mode, r.blocker_lock_modes
  FROM pgsentinel_rollup_blocking_hour r
 CROSS JOIN LATERAL (SELECT (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v;

-- Reads pgsentinel_rollup_blocking_minute.
CREATE VIEW pgsentinel_blocking_minute AS
SELECT r.bucket, r.kind, r.root_pid, r.pid, r.key_usesysid, r.depth,
       r.blocked_by, r.samples, r.db_time, r.last_time, r.usesysid, r.usename,
       CASE WHEN v.visible THEN r.state END AS state,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       CASE WHEN v.visible THEN r.query ELSE '<insufficient privilege>' END AS query,
       r.first_time, r.application_name,
       CASE WHEN v.visible THEN r.client_addr END AS client_addr,
       CASE WHEN v.visible THEN r.xact_start END AS xact_start,
       r.lock, r.lock_mode, r.blocker_lock_modes
  FROM pgsentinel_rollup_blocking_minute r
 CROSS JOIN LATERAL (SELECT (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v;

-- The samples' part hides nothing: pgsentinel_sample_archive shows every
-- sample too.
CREATE VIEW pgsentinel_sample_minute AS
SELECT o.bucket, o.samples, o.observed, o.peak
  FROM pgsentinel_rollup_minute_observed o;

-- Reads pgsentinel_rollup_hour_observed.
CREATE VIEW pgsentinel_sample_hour AS
SELECT o.bucket, o.samples, o.observed, o.peak
  FROM pgsentinel_rollup_hour_observed o;

-- The statements of the archived rows, with their top-level text, for
-- the reports that read only rollups for a statement (which keep its query
-- id, not its text); hidden as in pgsentinel_ash_archive.  A reader names
-- the batches it reads with batch_start and batch_end
-- (pgsentinel_archive_samples_by_batch); activity_id is the row's sample id.
CREATE VIEW pgsentinel_activity_archive AS
SELECT pg_catalog.timezone('UTC', r.batch_start)::pg_catalog.date AS day,
       r.sample_id AS activity_id, r.datname, r.usesysid, r.usename,
       r.application_name, r.queryid, r.query_start, r.top_level_query,
       r.batch_start, r.batch_end
  FROM pgsentinel_archive_rows_by_batch r;

GRANT SELECT ON pgsentinel_ash_minute, pgsentinel_ash_hour, pgsentinel_ash_session_hour,
    pgsentinel_ash_session_minute, pgsentinel_blocking_hour, pgsentinel_blocking_minute,
    pgsentinel_sample_minute, pgsentinel_sample_hour, pgsentinel_activity_archive TO PUBLIC;
