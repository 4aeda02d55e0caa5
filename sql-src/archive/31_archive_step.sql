
-- How the archiver (src/archive/archiver.c, src/archive/archive_step.c) fills the archive:
-- the step's SQL, the partitions to make and to drop, and the texts' ids.
-- The C keeps the loop, the locks, the transaction and the status; what
-- the statements read and write is here.  None of these functions is
-- granted to anybody but pgsentinel_text_split() and _fill(), which the
-- archive's views call with their readers' rights.

-- A statement text as {template, literal values}, and back (the rule that
-- makes the pair exact: src/archive/text_template.c).  The archive keeps
-- the template among the day's texts and the values with the row (in its
-- batch); its views read the text back with pgsentinel_text_fill().
CREATE FUNCTION pgsentinel_text_split(text)
RETURNS text[]
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_text_split';

-- Reads a template and its values; returns the statement text they make.
CREATE FUNCTION pgsentinel_text_fill(template text, text_values text)
RETURNS text
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_text_fill';

-- The ids of statement texts, each text stored once per day (UTC): those
-- already stored are found by hash, the others stored with the next ids of
-- their day.  days[i] is the day of texts[i]; NULL texts are passed over.
-- server_id NULL: the local archive (pgsentinel_archive_text); otherwise
-- that server's pulled texts in the repository (pgsentinel_fleet_text, feed
-- 0).  The caller serializes the writers of one table (the archiver's step
-- holds the watermark, a pull its server's row).
CREATE FUNCTION pgsentinel_text_ids(days date[], texts text[],
                                    server_id integer DEFAULT NULL)
RETURNS TABLE (day date, text text, text_id integer)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    fleet boolean := server_id IS NOT NULL;
BEGIN
    RETURN QUERY EXECUTE format($q$
WITH txt AS MATERIALIZED (
  SELECT DISTINCT u.day, u.text, hashtextextended(u.text, 0) AS hash
    FROM unnest($1, $2) u(day, text)
   WHERE u.text IS NOT NULL),
 old AS MATERIALIZED (
  SELECT x.day, x.text, o.text_id
    FROM txt x JOIN %1$I.%2$I o
      ON %3$s o.day = x.day AND o.hash = x.hash AND o.text = x.text),
 new AS (
  INSERT INTO %1$I.%2$I (%4$s day, text_id, hash, text)
  SELECT %5$s x.day,
         coalesce((SELECT max(o.text_id) FROM %1$I.%2$I o
                    WHERE %3$s o.day = x.day), 0)
         + row_number() OVER (PARTITION BY x.day ORDER BY x.hash, x.text),
         x.hash, x.text
    FROM txt x
   WHERE NOT EXISTS (SELECT FROM old y WHERE y.day = x.day AND y.text = x.text)
  RETURNING day, text, text_id)
SELECT o.day, o.text, o.text_id FROM old o
UNION ALL
SELECT n.day, n.text, n.text_id FROM new n$q$,
        s,
        CASE WHEN fleet THEN 'pgsentinel_fleet_text' ELSE 'pgsentinel_archive_text' END,
        CASE WHEN fleet THEN 'o.server_id = $3 AND o.feed = 0 AND' ELSE '' END,
        CASE WHEN fleet THEN 'server_id, feed,' ELSE '' END,
        CASE WHEN fleet THEN '$3, 0,' ELSE '' END)
        USING days, texts, server_id;
END
$fn$;
REVOKE EXECUTE ON FUNCTION pgsentinel_text_ids(date[], text[], integer) FROM PUBLIC;

-- How samples and their rows are stored, in the archive (local) or a
-- pulled server's part of the repository (fleet: $1 is its server id, feed
-- 0): the fragment (src/fragments.awk) that the archiving step
-- (pgsentinel_archive_step_sql()) and the pull (pgsentinel_fleet_pull_sql())
-- include after the samples kept (a CTE kept: sample_id, sample_time,
-- sample_period) and their rows (a CTE rws: the columns of
-- pg_active_session_history with weight, and the row's UTC day).  Texts (as templates), wait events and sessions are
-- found or added once per day, a session by its hash and then by all its
-- columns (a hash shared by two keeps both); the samples of each day are
-- inserted as one batch (batches returns the first_time of each one
-- inserted: its samples are batch_samples' of that first_time); mapped
-- gives the rows with their ids, per_sample the rows of active sessions
-- (weight > 0) of each sample (n).  The weight of a sample is its period
-- times keep_one_in (the step's $1, the pull's $3).
--@fragment store_rows
-- texts as templates, once per day; the literal values cut out of a
-- row's texts go with the row
 split AS MATERIALIZED (
  SELECT x.day, x.text, %1$I.pgsentinel_text_split(x.text) AS parts
    FROM (SELECT DISTINCT x.day, t.text
            FROM rws x,
                 LATERAL (VALUES (x.top_level_query), (x.query)) t(text)
           WHERE t.text IS NOT NULL) x),
 txt_ids AS MATERIALIZED (
  SELECT i.day, i.text, i.text_id
    FROM (SELECT array_agg(x.day) AS days, array_agg(x.parts[1]) AS texts
            FROM split x) a,
--@local
         %1$I.pgsentinel_text_ids(a.days, a.texts) i),
--@fleet
         %1$I.pgsentinel_text_ids(a.days, a.texts, $1) i),
--@both
 txt_all AS MATERIALIZED (
  SELECT x.day, x.text, i.text_id, x.parts[2] AS text_values
    FROM split x JOIN txt_ids i ON i.day = x.day AND i.text = x.parts[1]),
-- wait events by name
 we AS MATERIALIZED (
  SELECT DISTINCT x.wait_event_type, x.wait_event FROM rws x),
 we_old AS MATERIALIZED (
  SELECT o.wait_event_id, o.wait_event_type, o.wait_event
--@local
    FROM %1$I.pgsentinel_archive_wait_event o),
 we_new AS (
  INSERT INTO %1$I.pgsentinel_archive_wait_event
         (wait_event_id, wait_event_type, wait_event)
  SELECT coalesce((SELECT max(o.wait_event_id) FROM we_old o), 0)
--@fleet
    FROM %1$I.pgsentinel_fleet_wait_event o
   WHERE o.server_id = $1 AND o.feed = 0),
 we_new AS (
  INSERT INTO %1$I.pgsentinel_fleet_wait_event
         (server_id, feed, wait_event_id, wait_event_type, wait_event)
  SELECT $1, 0, coalesce((SELECT max(o.wait_event_id) FROM we_old o), 0)
--@both
         + row_number() OVER (ORDER BY w.wait_event_type, w.wait_event),
         w.wait_event_type, w.wait_event
    FROM we w
   WHERE NOT EXISTS (SELECT FROM we_old o
                      WHERE o.wait_event_type IS NOT DISTINCT FROM w.wait_event_type
                        AND o.wait_event IS NOT DISTINCT FROM w.wait_event)
  RETURNING wait_event_id, wait_event_type, wait_event),
 we_all AS MATERIALIZED (
  SELECT * FROM we_old UNION ALL SELECT * FROM we_new),
-- sessions, once per day, by hash and then by all their columns
 ses AS MATERIALIZED (
  SELECT x.*, row_number() OVER () AS n FROM (
  SELECT DISTINCT x.day, x.datid, x.datname, x.pid, x.leader_pid, x.usesysid, x.usename,
                  x.application_name, x.client_addr, x.client_hostname, x.client_port,
                  x.backend_start, x.backend_type,
         hashtextextended(ROW(x.datid, x.datname, x.pid, x.leader_pid, x.usesysid, x.usename,
                              x.application_name, x.client_addr, x.client_hostname, x.client_port,
                              x.backend_start, x.backend_type)::text, 0) AS hash
    FROM rws x) x),
 ses_old AS MATERIALIZED (
  SELECT DISTINCT ON (a.n) a.*, o.session_id
--@local
    FROM ses a JOIN %1$I.pgsentinel_archive_session o
      ON o.day = a.day AND o.hash = a.hash
--@fleet
    FROM ses a JOIN %1$I.pgsentinel_fleet_session o
      ON o.server_id = $1 AND o.feed = 0 AND o.day = a.day AND o.hash = a.hash
--@both
     AND (o.datid, o.datname, o.pid, o.leader_pid, o.usesysid, o.usename,
          o.application_name, o.client_addr, o.client_hostname, o.client_port,
          o.backend_start, o.backend_type)
         IS NOT DISTINCT FROM
         (a.datid, a.datname, a.pid, a.leader_pid, a.usesysid, a.usename,
          a.application_name, a.client_addr, a.client_hostname, a.client_port,
          a.backend_start, a.backend_type)
   ORDER BY a.n, o.session_id),
 ses_new AS (
--@local
  INSERT INTO %1$I.pgsentinel_archive_session (day, session_id, hash,
         datid, datname, pid, leader_pid, usesysid, usename, application_name,
         client_addr, client_hostname, client_port, backend_start, backend_type)
  SELECT a.day,
         coalesce((SELECT max(o.session_id)
                     FROM %1$I.pgsentinel_archive_session o
                    WHERE o.day = a.day), 0)
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_session (server_id, feed, day, session_id, hash,
         datid, datname, pid, leader_pid, usesysid, usename, application_name,
         client_addr, client_hostname, client_port, backend_start, backend_type)
  SELECT $1, 0, a.day,
         coalesce((SELECT max(o.session_id)
                     FROM %1$I.pgsentinel_fleet_session o
                    WHERE o.server_id = $1 AND o.feed = 0 AND o.day = a.day), 0)
--@both
         + row_number() OVER (PARTITION BY a.day ORDER BY a.hash),
         a.hash, a.datid, a.datname, a.pid, a.leader_pid, a.usesysid, a.usename,
         a.application_name, a.client_addr, a.client_hostname, a.client_port,
         a.backend_start, a.backend_type
    FROM ses a
   WHERE NOT EXISTS (SELECT FROM ses_old y WHERE y.n = a.n)
  RETURNING day, hash, session_id, datid, datname, pid, leader_pid, usesysid, usename, application_name,
            client_addr, client_hostname, client_port, backend_start, backend_type),
 ses_all AS MATERIALIZED (
  SELECT day, hash, session_id, datid, datname, pid, leader_pid, usesysid, usename, application_name,
         client_addr, client_hostname, client_port, backend_start, backend_type FROM ses_old
  UNION ALL
  SELECT day, hash, session_id, datid, datname, pid, leader_pid, usesysid, usename, application_name,
         client_addr, client_hostname, client_port, backend_start, backend_type FROM ses_new),
-- each row with its session, texts and wait
 mapped AS MATERIALIZED (
  SELECT x.*, se.session_id, tt.text_id AS top_level_query_id,
         tt.text_values AS top_level_query_values, qt.text_id AS query_id,
         qt.text_values AS query_values, w.wait_event_id
    FROM rws x
    JOIN ses_all se ON se.day = x.day
     AND se.hash = hashtextextended(ROW(x.datid, x.datname, x.pid, x.leader_pid,
             x.usesysid, x.usename, x.application_name, x.client_addr,
             x.client_hostname, x.client_port, x.backend_start,
             x.backend_type)::text, 0)
     AND (se.datid, se.datname, se.pid, se.leader_pid, se.usesysid, se.usename,
          se.application_name, se.client_addr, se.client_hostname,
          se.client_port, se.backend_start, se.backend_type)
         IS NOT DISTINCT FROM
         (x.datid, x.datname, x.pid, x.leader_pid, x.usesysid, x.usename,
          x.application_name, x.client_addr, x.client_hostname, x.client_port,
          x.backend_start, x.backend_type)
    LEFT JOIN txt_all tt ON tt.day = x.day AND tt.text = x.top_level_query
    LEFT JOIN txt_all qt ON qt.day = x.day AND qt.text = x.query
    JOIN we_all w ON w.wait_event_type IS NOT DISTINCT FROM x.wait_event_type
                 AND w.wait_event IS NOT DISTINCT FROM x.wait_event),
-- per sample: its rows of active sessions (weight > 0), and whether one of
-- its rows waited for another session
 per_sample AS MATERIALIZED (
  SELECT m.sample_id, m.ash_time AS sample_time,
         (count(*) FILTER (WHERE m.weight > 0))::int4 AS n,
         bool_or(m.blockers > 0) AS blocked
    FROM mapped m GROUP BY m.sample_id, m.ash_time),
-- the batches (30_archive.sql): the caller's kept samples of each UTC day,
-- numbered in time order, and their rows
 batch_samples AS MATERIALIZED (
  SELECT k.day, k.sample_id, k.sample_time, k.sample_period,
--@local
         k.sample_period * $1 AS weight, coalesce(p.n, 0) AS n,
--@fleet
         k.sample_period * $3 AS weight, coalesce(p.n, 0) AS n,
--@both
         coalesce(p.blocked, false) AS blocked,
         min(k.sample_time) OVER (PARTITION BY k.day) AS first_time,
         row_number() OVER (PARTITION BY k.day
                            ORDER BY k.sample_time, k.sample_id)::int4 AS si
    FROM (SELECT y.sample_id, y.sample_time, y.sample_period,
                 timezone('UTC', y.sample_time)::date AS day
            FROM kept y) k
    LEFT JOIN per_sample p
      ON p.sample_id = k.sample_id AND p.sample_time = k.sample_time),
 batch_rows AS MATERIALIZED (
  SELECT b.day, b.first_time,
         %1$I.pgsentinel_batch_pack(
         %1$I.pgsentinel_pack(array_agg(b.si ORDER BY b.si, m.session_id)),
         %1$I.pgsentinel_pack(array_agg(m.session_id ORDER BY b.si, m.session_id)),
         %1$I.pgsentinel_pack(array_agg(m.wait_event_id ORDER BY b.si, m.session_id)),
         array_agg(m.state ORDER BY b.si, m.session_id),
         %1$I.pgsentinel_pack(array_agg(%1$I.pgsentinel_us_between(b.first_time, m.xact_start)
                   ORDER BY b.si, m.session_id)),
         %1$I.pgsentinel_pack(array_agg(%1$I.pgsentinel_us_between(coalesce(m.xact_start, b.first_time),
                                              m.query_start)
                   ORDER BY b.si, m.session_id)),
         %1$I.pgsentinel_pack(array_agg(%1$I.pgsentinel_us_between(coalesce(m.query_start, m.xact_start,
                                                       b.first_time),
                                              m.state_change)
                   ORDER BY b.si, m.session_id)),
         %1$I.pgsentinel_pack(array_agg(m.backend_xid ORDER BY b.si, m.session_id)),
         %1$I.pgsentinel_pack(array_agg(m.backend_xmin ORDER BY b.si, m.session_id)),
         %1$I.pgsentinel_pack(array_agg(m.top_level_query_id ORDER BY b.si, m.session_id)),
         array_agg(m.top_level_query_values ORDER BY b.si, m.session_id),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN m.query_id = m.top_level_query_id
                         AND m.query_values IS NOT DISTINCT FROM m.top_level_query_values
                        THEN 0 ELSE m.query_id END
                   ORDER BY b.si, m.session_id)),
         array_agg(CASE WHEN m.query_id = m.top_level_query_id
                         AND m.query_values IS NOT DISTINCT FROM m.top_level_query_values
                        THEN NULL ELSE m.query_values END
                   ORDER BY b.si, m.session_id),
         array_agg(m.cmdtype ORDER BY b.si, m.session_id),
         array_agg(m.queryid ORDER BY b.si, m.session_id),
         array_agg(CASE WHEN m.nested_queryid IS NOT DISTINCT FROM m.queryid
                        THEN NULL ELSE m.nested_queryid END
                   ORDER BY b.si, m.session_id),
         CASE WHEN bool_or(m.blockers > 0) THEN
           %1$I.pgsentinel_pack(array_agg(m.blockers ORDER BY b.si, m.session_id)) END,
         CASE WHEN bool_or(m.blockers > 0) THEN
           %1$I.pgsentinel_pack(array_agg(m.blockerpid ORDER BY b.si, m.session_id)) END,
         CASE WHEN bool_or(m.blockers > 0) THEN
           array_agg(m.blocker_state ORDER BY b.si, m.session_id) END,
         CASE WHEN bool_or(m.blockers > 0) THEN
           array_agg(m.blocker_usesysid ORDER BY b.si, m.session_id) END,
         CASE WHEN bool_or(m.blockers > 0) THEN
           array_agg(CASE WHEN m.blockers > 0 THEN m.blocking_pids::text END
                     ORDER BY b.si, m.session_id) END,
         CASE WHEN bool_or(m.lock_type IS NOT NULL) THEN
           array_agg(m.lock_type ORDER BY b.si, m.session_id) END,
         CASE WHEN bool_or(m.lock_relation IS NOT NULL) THEN
           array_agg(m.lock_relation ORDER BY b.si, m.session_id) END,
         CASE WHEN bool_or(m.lock_target IS NOT NULL) THEN
           array_agg(m.lock_target ORDER BY b.si, m.session_id) END,
         CASE WHEN bool_or(m.lock_mode IS NOT NULL) THEN
           array_agg(m.lock_mode ORDER BY b.si, m.session_id) END,
         CASE WHEN bool_or(m.blocker_lock_modes IS NOT NULL) THEN
           array_agg(m.blocker_lock_modes ORDER BY b.si, m.session_id) END,
         %1$I.pgsentinel_pack(array_agg((m.nested_queryid IS NOT DISTINCT FROM m.queryid)::int4
                                        ORDER BY b.si, m.session_id))) AS row_data
    FROM mapped m
    JOIN batch_samples b ON b.sample_id = m.sample_id AND b.sample_time = m.ash_time
   GROUP BY b.day, b.first_time),
 batches AS (
--@local
  INSERT INTO %1$I.pgsentinel_archive_batch (first_time, last_time,
         sample_data, row_data)
  SELECT s.first_time, s.last_time,
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_batch (server_id, feed, first_time, last_time,
         sample_data, row_data)
  SELECT $1, 0, s.first_time, s.last_time,
--@both
         s.sample_data,
         -- (a day's samples without rows: typed, so that nothing else binds)
         coalesce(r.row_data, %1$I.pgsentinel_batch_pack(NULL::pg_catalog.bytea,
           NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.text[],
           NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea,
           NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea,
           NULL::pg_catalog.text[], NULL::pg_catalog.bytea, NULL::pg_catalog.text[],
           NULL::pg_catalog.text[], NULL::pg_catalog.int8[], NULL::pg_catalog.int8[],
           NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.text[],
           NULL::pg_catalog.oid[], NULL::pg_catalog.text[]))
    FROM (SELECT b.day, min(b.sample_time) AS first_time,
                 max(b.sample_time) AS last_time,
                 %1$I.pgsentinel_sample_pack(
                   array_agg(b.sample_id ORDER BY b.si),
                   array_agg(%1$I.pgsentinel_us_between(b.first_time, b.sample_time)
                             ORDER BY b.si),
                   array_agg(b.sample_period ORDER BY b.si),
                   array_agg(b.weight ORDER BY b.si),
                   array_agg(b.n ORDER BY b.si),
                   array_agg(b.blocked ORDER BY b.si)) AS sample_data
            FROM batch_samples b GROUP BY b.day) s
    LEFT JOIN batch_rows r ON r.day = s.day
--@fleet
  ON CONFLICT DO NOTHING
--@both
  RETURNING first_time),
--@end

-- How the rollups are made of rows, in the archive (local) or a fleet
-- server's part of the repository (fleet: $1 is its server id): the
-- fragment that the archiving step (pgsentinel_archive_step_sql()) and the
-- fleet's roll (pgsentinel_fleet_roll_sql()) include after the CTEs roll_range
-- (lo, hi: the minutes rolled up; hlo, hhi: the hours closed, from their
-- minutes before lo read back and the rows before hhi), roll_rows (the
-- rows of [lo, hi) and their weights, as pgsentinel_ash_archive shows
-- them) and roll_samples (the samples of [lo, hi): time, weight, active
-- sessions).  Each minute and each hour is inserted once.  In the archive
-- a row of a bucket already rolled up (a late row: see the step) adds to
-- that bucket's rows by key; a fleet server's rows are rolled up by time
-- only (its partitions may be foreign tables, which take no ON CONFLICT):
-- a row that arrives for a time already rolled up is read from the rows,
-- not the rollups (docs/fleet.md).
--@fragment rollups
-- A minute's rows as one batch (30_archive.sql): the arrays of one
-- aggregation, so that element i of each is the same row; the rows in
-- the order of their names, which repeat in each array and compress.
 roll_minute AS (
--@local
  INSERT INTO %1$I.pgsentinel_rollup_minute_batch (bucket, row_data)
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_rollup_minute_batch (bucket, row_data, server_id)
--@both
  SELECT m.bucket, %1$I.pgsentinel_minute_pack(array_agg(m.datname),
         array_agg(m.usesysid), array_agg(m.usename),
         array_agg(m.application_name), array_agg(m.backend_type),
         array_agg(m.wait_event_type), array_agg(m.wait_event),
         array_agg(m.queryid), array_agg(m.db_time),
--@local
         array_agg(m.rows))
--@fleet
         array_agg(m.rows)), $1
--@both
    FROM (SELECT date_trunc('minute', m.ash_time, 'UTC') AS bucket, m.datname,
                 m.usesysid, m.usename, m.application_name, m.backend_type,
                 m.wait_event_type, m.wait_event, m.queryid,
                 sum(m.weight) AS db_time, count(*) AS rows
            FROM roll_rows m WHERE m.weight > 0 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
           ORDER BY 1, 2, 4, 5, 6, 9, 7, 8) m
   GROUP BY m.bucket),
 roll_hour AS (
--@local
  INSERT INTO %1$I.pgsentinel_rollup_hour AS t (bucket, datname, usesysid,
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_rollup_hour AS t (bucket, datname, usesysid,
--@both
         usename, application_name, backend_type, wait_event_type,
--@local
         wait_event, queryid, db_time, rows)
--@fleet
         wait_event, queryid, db_time, rows, server_id)
--@both
  SELECT date_trunc('hour', h.bucket, 'UTC'), h.datname, h.usesysid,
         h.usename, h.application_name, h.backend_type, h.wait_event_type,
--@local
         h.wait_event, h.queryid, sum(h.db_time), sum(h.rows)
--@fleet
         h.wait_event, h.queryid, sum(h.db_time), sum(h.rows), $1
--@both
    FROM (SELECT m.bucket, m.datname, m.usesysid, m.usename,
                 m.application_name, m.backend_type, m.wait_event_type,
                 m.wait_event, m.queryid, m.db_time, m.rows
--@local
            FROM %1$I.pgsentinel_rollup_minute m
           WHERE m.bucket >= (SELECT g.hlo FROM roll_range g)
--@fleet
            FROM %1$I.pgsentinel_fleet_rollup_minute m
           WHERE m.bucket >= (SELECT g.hlo FROM roll_range g) AND m.server_id = $1
--@both
             AND m.bucket < (SELECT least(g.lo, g.hhi) FROM roll_range g)
          UNION ALL
          SELECT m.ash_time, m.datname, m.usesysid, m.usename,
                 m.application_name, m.backend_type, m.wait_event_type,
                 m.wait_event, m.queryid, m.weight, 1
            FROM roll_range g, roll_rows m
           WHERE m.weight > 0 AND m.ash_time < g.hhi) h
   GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
--@local
  ON CONFLICT (bucket, datname, usesysid, usename, application_name,
               backend_type, wait_event_type, wait_event, queryid)
  DO UPDATE SET db_time = t.db_time + excluded.db_time,
                rows = t.rows + excluded.rows
--@both
),
 roll_session_hour AS (
--@local
  INSERT INTO %1$I.pgsentinel_rollup_session_hour AS t (bucket, pid, datname,
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_rollup_session_hour AS t (bucket, pid, datname,
--@both
         usesysid, usename, application_name, client_addr, backend_type,
--@local
         wait_event_type, wait_event, db_time, rows, last_time)
--@fleet
         wait_event_type, wait_event, db_time, rows, last_time, server_id)
--@both
  SELECT date_trunc('hour', h.bucket, 'UTC'), h.pid, h.datname,
         h.usesysid, h.usename, h.application_name, h.client_addr,
         h.backend_type, h.wait_event_type, h.wait_event,
--@local
         sum(h.db_time), sum(h.rows), max(h.last_time)
--@fleet
         sum(h.db_time), sum(h.rows), max(h.last_time), $1
--@both
    FROM (SELECT m.bucket, m.pid, m.datname, m.usesysid, m.usename,
                 m.application_name, m.client_addr, m.backend_type,
                 m.wait_event_type, m.wait_event, m.db_time, m.rows, m.last_time
--@local
            FROM %1$I.pgsentinel_rollup_session_minute m
           WHERE m.bucket >= (SELECT g.hlo FROM roll_range g)
--@fleet
            FROM %1$I.pgsentinel_fleet_rollup_session_minute m
           WHERE m.bucket >= (SELECT g.hlo FROM roll_range g) AND m.server_id = $1
--@both
             AND m.bucket < (SELECT least(g.lo, g.hhi) FROM roll_range g)
          UNION ALL
          SELECT m.ash_time, m.pid, m.datname, m.usesysid, m.usename,
                 m.application_name, m.client_addr, m.backend_type,
                 m.wait_event_type, m.wait_event, m.weight, 1, m.ash_time
            FROM roll_range g, roll_rows m
           WHERE m.weight > 0 AND m.ash_time < g.hhi) h
   GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
--@local
  ON CONFLICT (bucket, pid, datname, usesysid, usename, application_name,
               client_addr, backend_type, wait_event_type, wait_event)
  DO UPDATE SET db_time = t.db_time + excluded.db_time,
                rows = t.rows + excluded.rows,
                last_time = greatest(t.last_time, excluded.last_time)
--@both
),
 roll_session_minute AS (
--@local
  INSERT INTO %1$I.pgsentinel_rollup_session_minute_batch (bucket, row_data)
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_rollup_session_minute_batch (bucket, row_data, server_id)
--@both
  SELECT m.bucket, %1$I.pgsentinel_session_minute_pack(array_agg(m.pid),
         array_agg(m.datname), array_agg(m.usesysid), array_agg(m.usename),
         array_agg(m.application_name), array_agg(m.client_addr),
         array_agg(m.backend_type), array_agg(m.wait_event_type),
         array_agg(m.wait_event), array_agg(m.db_time), array_agg(m.rows),
--@local
         array_agg(m.last_time))
--@fleet
         array_agg(m.last_time)), $1
--@both
    FROM (SELECT date_trunc('minute', m.ash_time, 'UTC') AS bucket, m.pid,
                 m.datname, m.usesysid, m.usename, m.application_name,
                 m.client_addr, m.backend_type, m.wait_event_type,
                 m.wait_event, sum(m.weight) AS db_time, count(*) AS rows,
                 max(m.ash_time) AS last_time
            FROM roll_rows m WHERE m.weight > 0
           GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
           ORDER BY 1, 2, 3, 5, 6, 7, 8, 9, 10) m
   GROUP BY m.bucket),
-- the rows of the samples with a blocked session, found in one pass (a
-- join of the rows with those samples can be planned as a nested loop
-- over both)
 bl_rows AS MATERIALIZED (
  SELECT coalesce(jsonb_agg(jsonb_build_object(
               'ash_time', m.ash_time, 'sample_id', m.sample_id,
               'pid', m.pid, 'weight', m.weight,
               'usesysid', m.usesysid, 'usename', m.usename,
               'application_name', m.application_name,
               'client_addr', m.client_addr, 'xact_start', m.xact_start,
               'state', m.state, 'wait_event_type', m.wait_event_type,
               'wait_event', m.wait_event, 'query', m.top_level_query,
               'blocking', CASE WHEN m.blockers > 0
                                 AND cardinality(m.blocking_pids) > 0
                                THEN m.blocking_pids
                                WHEN m.blockerpid IS NOT NULL
                                THEN ARRAY[m.blockerpid] END,
               'blockerpid', m.blockerpid, 'blocker_state', m.blocker_state,
               'blocker_usesysid', m.blocker_usesysid,
               'lock', %1$I.pgsentinel_lock_name(m.lock_type, m.lock_relation,
                                                 m.lock_target, m.lock_db),
               'lock_mode', m.lock_mode,
               'blocker_lock_modes', m.blocker_lock_modes)), '[]') AS rows
      FROM (SELECT y.*, bool_or(y.blockers > 0)
                              OVER (PARTITION BY y.ash_time, y.sample_id) AS blocked
              FROM roll_rows y) m
     WHERE m.blocked),
-- their parts by minute, for the minutes and the hours closed
 bl_parts AS MATERIALIZED (
  SELECT b.* FROM bl_rows r, %1$I.pgsentinel_blocking_parts(r.rows, 'minute'::text) b),
-- an hour's blocking parts merged key by key (one key's parts in one
-- JSON array, a few dozen: a whole hour's of a lock storm in one could
-- pass jsonb's size limit and stop the archiver for good)
 roll_blocking_hour AS (
--@local
  INSERT INTO %1$I.pgsentinel_rollup_blocking_hour AS t (bucket, kind,
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_rollup_blocking_hour AS t (bucket, kind,
--@both
         root_pid, pid, key_usesysid, depth, blocked_by, samples, db_time,
         last_time, usesysid, usename, state, wait_event_type, wait_event,
         query, first_time, application_name, client_addr, xact_start, lock,
--@local
         lock_mode, blocker_lock_modes)
  SELECT h.* FROM (
--@fleet
         lock_mode, blocker_lock_modes, server_id)
  SELECT h.*, $1 FROM (
--@both
         SELECT jsonb_agg(to_jsonb(p)) AS parts
           FROM (SELECT m.bucket, m.kind, m.root_pid, m.pid, m.key_usesysid, m.depth,
                         m.blocked_by, m.samples, m.db_time, m.last_time, m.usesysid,
                         m.usename, m.state, m.wait_event_type, m.wait_event, m.query,
                         m.first_time, m.application_name, m.client_addr, m.xact_start,
                         m.lock, m.lock_mode, m.blocker_lock_modes
--@local
                   FROM %1$I.pgsentinel_rollup_blocking_minute m
                  WHERE m.bucket >= (SELECT g.hlo FROM roll_range g)
--@fleet
                   FROM %1$I.pgsentinel_fleet_rollup_blocking_minute m
                  WHERE m.bucket >= (SELECT g.hlo FROM roll_range g) AND m.server_id = $1
--@both
                    AND m.bucket < (SELECT least(g.lo, g.hhi) FROM roll_range g)
                 UNION ALL
                 SELECT b.* FROM roll_range g, bl_parts b
                  WHERE b.bucket < g.hhi) p
          GROUP BY date_trunc('hour', p.bucket, 'UTC'), p.kind, p.root_pid, p.pid,
                   p.key_usesysid) x,
       %1$I.pgsentinel_blocking_merge(x.parts, 'hour'::text) h
--@local
-- a bucket's part of the blocking trees added to the one already kept:
-- counts and times summed, the deepest level and all blockers kept, the
-- names of the latest row
  ON CONFLICT (bucket, kind, root_pid, pid, key_usesysid)
  DO UPDATE SET depth = greatest(t.depth, excluded.depth),
                blocked_by = (SELECT array_agg(DISTINCT x ORDER BY x)
                                FROM unnest(t.blocked_by || excluded.blocked_by) x),
                samples = t.samples + excluded.samples,
                db_time = t.db_time + excluded.db_time,
                usesysid = CASE WHEN excluded.last_time >= t.last_time
                                THEN excluded.usesysid ELSE t.usesysid END,
                usename = CASE WHEN excluded.last_time >= t.last_time
                               THEN excluded.usename ELSE t.usename END,
                state = CASE WHEN excluded.last_time >= t.last_time
                             THEN excluded.state ELSE t.state END,
                wait_event_type = CASE WHEN excluded.last_time >= t.last_time
                     THEN excluded.wait_event_type ELSE t.wait_event_type END,
                wait_event = CASE WHEN excluded.last_time >= t.last_time
                                  THEN excluded.wait_event ELSE t.wait_event END,
                query = CASE WHEN excluded.last_time >= t.last_time
                             THEN excluded.query ELSE t.query END,
                application_name = CASE WHEN excluded.last_time >= t.last_time
                     THEN excluded.application_name ELSE t.application_name END,
                client_addr = CASE WHEN excluded.last_time >= t.last_time
                     THEN excluded.client_addr ELSE t.client_addr END,
                xact_start = CASE WHEN excluded.last_time >= t.last_time
                     THEN excluded.xact_start ELSE t.xact_start END,
                lock = CASE WHEN excluded.last_time >= t.last_time
                     THEN excluded.lock ELSE t.lock END,
                lock_mode = CASE WHEN excluded.last_time >= t.last_time
                     THEN excluded.lock_mode ELSE t.lock_mode END,
                blocker_lock_modes = CASE WHEN excluded.last_time >= t.last_time
                     THEN excluded.blocker_lock_modes ELSE t.blocker_lock_modes END,
                first_time = least(t.first_time, excluded.first_time),
                last_time = greatest(t.last_time, excluded.last_time)
--@both
),
 roll_blocking_minute AS (
--@local
  INSERT INTO %1$I.pgsentinel_rollup_blocking_minute_batch (bucket, row_data)
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_rollup_blocking_minute_batch (bucket, row_data, server_id)
--@both
  SELECT b.bucket, %1$I.pgsentinel_blocking_minute_pack(
         array_agg(b.kind), array_agg(b.root_pid), array_agg(b.pid),
         array_agg(b.key_usesysid), array_agg(b.depth), array_agg(b.blocked_by::text),
         array_agg(b.samples), array_agg(b.db_time), array_agg(b.last_time),
         array_agg(b.usesysid), array_agg(b.usename), array_agg(b.state),
         array_agg(b.wait_event_type), array_agg(b.wait_event), array_agg(b.query),
         array_agg(b.first_time), array_agg(b.application_name),
         array_agg(b.client_addr), array_agg(b.xact_start), array_agg(b.lock),
--@local
         array_agg(b.lock_mode), array_agg(b.blocker_lock_modes))
--@fleet
         array_agg(b.lock_mode), array_agg(b.blocker_lock_modes)), $1
--@both
    -- (in the order of their transactions' starts, which then take a few
    -- bytes each as differences: a minute's payload 9 %% less under pgbench
    -- read-write than in the order of root and pid, bench/REPORT.md 6l)
    FROM (SELECT * FROM bl_parts p
           ORDER BY p.bucket, p.xact_start, p.root_pid, p.kind, p.pid,
                    p.key_usesysid) b
   GROUP BY b.bucket),
 obs_minute AS (
--@local
  INSERT INTO %1$I.pgsentinel_rollup_minute_observed AS t
         (bucket, samples, observed, peak)
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_rollup_minute_observed AS t
         (bucket, samples, observed, peak, server_id)
--@both
  SELECT date_trunc('minute', k.sample_time, 'UTC'), count(*),
--@local
         sum(k.weight), max(k.active_sessions)
--@fleet
         sum(k.weight), max(k.active_sessions), $1
--@both
    FROM roll_samples k GROUP BY 1
--@local
  ON CONFLICT (bucket) DO UPDATE SET samples = t.samples + excluded.samples,
                                     observed = t.observed + excluded.observed,
                                     peak = greatest(t.peak, excluded.peak)
--@both
),
 obs_hour AS (
--@local
  INSERT INTO %1$I.pgsentinel_rollup_hour_observed AS t
         (bucket, samples, observed, peak)
--@fleet
  INSERT INTO %1$I.pgsentinel_fleet_rollup_hour_observed AS t
         (bucket, samples, observed, peak, server_id)
--@both
  SELECT date_trunc('hour', h.bucket, 'UTC'), sum(h.samples),
--@local
         sum(h.observed), max(h.peak)
--@fleet
         sum(h.observed), max(h.peak), $1
--@both
    FROM (SELECT m.bucket, m.samples, m.observed, m.peak
--@local
            FROM %1$I.pgsentinel_rollup_minute_observed m
           WHERE m.bucket >= (SELECT g.hlo FROM roll_range g)
--@fleet
            FROM %1$I.pgsentinel_fleet_rollup_minute_observed m
           WHERE m.bucket >= (SELECT g.hlo FROM roll_range g) AND m.server_id = $1
--@both
             AND m.bucket < (SELECT least(g.lo, g.hhi) FROM roll_range g)
          UNION ALL
          SELECT k.sample_time, 1, k.weight, k.active_sessions
            FROM roll_range g, roll_samples k
           WHERE k.sample_time < g.hhi) h
   GROUP BY 1
--@local
  ON CONFLICT (bucket) DO UPDATE SET samples = t.samples + excluded.samples,
                                     observed = t.observed + excluded.observed,
                                     peak = greatest(t.peak, excluded.peak)
--@both
),
--@end

-- The archiving step, one statement (src/archive/archive_step.c runs it with
-- format(pgsentinel_archive_step_sql(), schema)).  It copies the samples
-- after the watermark from the rings into the archive tables, adds them to
-- the rollups and moves the watermark.
--
-- Exactly once: the watermark is read FOR UPDATE and written in the same
-- statement as the rows, so the rows and the watermark commit or roll back
-- together, and two steps never run at once.  The watermark is (history
-- id, last sample id, last sample time): within the history it names, the
-- step goes on after the sample id; in another history (the ring started
-- again empty after a crash, or this is a promoted standby whose ring
-- sampled other sessions) it goes on after the time, so that a window is
-- never archived twice.  Samples the ring lost before they were archived
-- are counted (ids skipped within a history, and rows of active sessions a
-- sample wrote that are no longer in the ring).
--
-- Downsampling: a sample is kept when sample_id % keep_one_in = 0; the
-- others are skipped and counted, and each kept row weighs its sample's
-- period times keep_one_in.
--
-- Rollups: a minute is rolled up once, by the step that archives past its
-- end, from the kept rows of that minute; an hour once, by the step that
-- rolls up past its end, from its minutes (those of earlier steps read back
-- from the minute tables, this step's from its rows).  rolled_until (in
-- the watermark's row, moved with it) is
-- the end of the last minute rolled: the rollups equal the sums of the raw
-- rows before it, and readers take the time after it from the raw rows
-- (pgsentinel_history_split).  Where it is not set yet (the first step; an
-- archive restored from a dump, which does not keep the watermark) the
-- rollups end after their last minute, or, without any, at the start of
-- the step's first sample's minute: rollups before it (restored, or made
-- by hand) are whole.  The step's own rows of a minute before rolled_until
-- (the clock went back, or a sample was dated ahead) are rolled up by the
-- step, as extra rows of their minute: readers sum a minute's rows, and
-- nothing is read back before rolled_until, so no row is counted twice
-- nor left out; such rows of an hour already rolled up (before
-- hours_rolled_until, the start of rolled_until's hour) are added to its
-- rows by key.  The archive's rows of the minutes to roll are found by their
-- times as constants of the statement (InitPlans): the scan is of those
-- minutes' partitions and blocks only, not of the archive.  Written once
-- rather than at every step, a bucket's rows are not rewritten a dozen
-- times (a minute's) or 720 times (an hour's): that was most of the
-- archive's WAL (one new version of every group's row each step).
--
-- %1$I is the extension's schema; $1 keep_one_in, $2 the most samples to
-- take, $3 the oldest time the retention keeps (older samples are skipped:
-- their partitions are gone), $4 the first sample not to take yet (rows
-- still waiting for their query id).  Returns the samples seen, kept, rows
-- archived, samples and rows lost, whether more samples wait, and the new
-- watermark's time.  The archiver runs it with search_path = pg_catalog,
-- pg_temp: every name of ours in it is schema-qualified.
CREATE FUNCTION pgsentinel_archive_step_sql()
RETURNS text
LANGUAGE sql IMMUTABLE
RETURN $sql$
WITH st AS MATERIALIZED (
  SELECT s.history_id, s.last_sample_id, s.last_sample_time, s.rolled_until,
         s.hours_rolled_until
    FROM %1$I.pgsentinel_archive_state s FOR UPDATE),
 hid AS MATERIALIZED (SELECT %1$I.pgsentinel_history_id() AS id),
 ring AS MATERIALIZED (
  SELECT p.sample_id, p.sample_time, p.sample_period, p.active_sessions
    FROM %1$I.pgsentinel_samples() p, st, hid
   WHERE CASE WHEN st.history_id = hid.id
              THEN p.sample_id > st.last_sample_id
              ELSE p.sample_time > coalesce(st.last_sample_time, '-infinity') END
     AND p.sample_id < $4
   ORDER BY p.sample_id LIMIT $2),
 kept AS MATERIALIZED (
  SELECT * FROM ring WHERE ring.sample_id %% $1 = 0 AND ring.sample_time >= $3),
 rws AS MATERIALIZED (
  SELECT r.*, timezone('UTC', r.ash_time)::date AS day
    FROM %1$I.pgsentinel_ash_ring r
   WHERE r.sample_id >= (SELECT min(k.sample_id) FROM kept k)
     AND r.sample_id <= (SELECT max(k.sample_id) FROM kept k)
     AND r.sample_id IN (SELECT k.sample_id FROM kept k)),
--@include store_rows local
-- rollups: of the minutes that this step closes (every sample of theirs is
-- archived now, by an earlier step or by this one), each minute once: the
-- rows of earlier steps read back from the archive, this step's from the
-- ring (the statement does not see its own inserts).  A minute's rows are
-- inserted; an hour's, when the step closes it, made from its minutes, and
-- added to by key (the late rows above).
 roll_range0 AS MATERIALIZED (
  SELECT greatest(coalesce(st.rolled_until,
                           (SELECT max(o.bucket) + interval '1 minute'
                              FROM %1$I.pgsentinel_rollup_minute_observed o),
                           date_trunc('minute', (SELECT min(r.sample_time) FROM ring r), 'UTC')),
                  date_trunc('minute', $3, 'UTC')) AS lo,
         date_trunc('minute', (SELECT max(r.sample_time) FROM ring r), 'UTC') AS hi,
         st.hours_rolled_until
    FROM st),
-- hlo: the hours before it are rolled up (where not set yet, the hours
-- before lo's, and any the hour rollups already hold: an archive restored
-- from a dump whose last minute rolled up was in a closed hour); hhi: the
-- end of the last whole hour this step rolls up the minutes of (the hours
-- between are closed now)
 roll_range1 AS MATERIALIZED (
  SELECT g.lo, g.hi,
         coalesce(g.hours_rolled_until,
                  greatest(date_trunc('hour', g.lo, 'UTC'),
                           (SELECT max(o.bucket) + interval '1 hour'
                              FROM %1$I.pgsentinel_rollup_hour_observed o))) AS hlo
    FROM roll_range0 g),
 roll_range AS MATERIALIZED (
  SELECT g.lo, g.hi, g.hlo,
         CASE WHEN g.hi IS NULL THEN g.hlo
              ELSE greatest(g.hlo, date_trunc('hour', greatest(g.lo, g.hi), 'UTC')) END AS hhi
    FROM roll_range1 g),
 roll_rows AS MATERIALIZED (
  SELECT a.ash_time, a.sample_id, a.pid, a.datname, a.usesysid, a.usename,
         a.application_name, a.client_addr, a.backend_type,
         a.wait_event_type, a.wait_event, a.queryid, a.weight, a.state,
         a.xact_start, a.top_level_query, a.blockers, a.blockerpid,
         a.blocker_state, a.blocker_usesysid, a.blocking_pids, a.lock_type,
         a.lock_relation, a.lock_target, a.lock_mode, a.blocker_lock_modes,
         a.datname AS lock_db
    FROM %1$I.pgsentinel_archive_rows_by_batch a
   WHERE a.ash_time >= (SELECT g.lo FROM roll_range g)
     AND a.ash_time < (SELECT g.hi FROM roll_range g)
     AND a.batch_start >= (SELECT date_trunc('day', g.lo, 'UTC') FROM roll_range g)
     AND a.batch_start < (SELECT g.hi FROM roll_range g)
     AND a.batch_end >= (SELECT g.lo FROM roll_range g)
  UNION ALL
  SELECT m.ash_time, m.sample_id, m.pid, m.datname, m.usesysid, m.usename,
         m.application_name, m.client_addr::text, m.backend_type,
         m.wait_event_type, m.wait_event, m.queryid, m.weight * $1, m.state,
         m.xact_start, m.top_level_query, coalesce(m.blockers, 0),
         m.blockerpid, m.blocker_state, m.blocker_usesysid,
         coalesce(m.blocking_pids, '{}')::int4[], m.lock_type, m.lock_relation,
         m.lock_target, m.lock_mode, m.blocker_lock_modes, m.datname
    FROM roll_range g, mapped m
   WHERE m.ash_time < greatest(g.lo, g.hi)),
 roll_samples AS MATERIALIZED (
  SELECT a.sample_time, a.weight, a.active_sessions
    FROM %1$I.pgsentinel_archive_samples_by_batch a
   WHERE a.sample_time >= (SELECT g.lo FROM roll_range g)
     AND a.sample_time < (SELECT g.hi FROM roll_range g)
     AND a.batch_start >= (SELECT date_trunc('day', g.lo, 'UTC') FROM roll_range g)
     AND a.batch_start < (SELECT g.hi FROM roll_range g)
     AND a.batch_end >= (SELECT g.lo FROM roll_range g)
  UNION ALL
  SELECT k.sample_time, k.sample_period * $1, coalesce(p.n, 0)
    FROM roll_range g, kept k LEFT JOIN per_sample p
      ON p.sample_id = k.sample_id AND p.sample_time = k.sample_time
   WHERE k.sample_time < greatest(g.lo, g.hi)),
--@include rollups local
-- the watermark, with the counts
 counts AS MATERIALIZED (
  SELECT (SELECT count(*) FROM ring) AS seen,
         (SELECT count(*) FROM kept) AS kept,
         (SELECT count(*) FROM mapped) AS rows,
         (SELECT CASE WHEN st.history_id = hid.id
                      THEN greatest(min(r.sample_id) - st.last_sample_id - 1, 0)
                      ELSE 0 END
            FROM ring r, st, hid GROUP BY st.history_id, hid.id,
                 st.last_sample_id) AS samples_lost,
         (SELECT coalesce(sum(greatest(k.active_sessions -
                                       coalesce(g.n, 0), 0)), 0)::int8
            FROM kept k LEFT JOIN per_sample g
      ON g.sample_id = k.sample_id AND g.sample_time = k.sample_time)
         AS rows_lost),
 upd AS (
  UPDATE %1$I.pgsentinel_archive_state s
     SET history_id = hid.id,
         last_sample_id = (SELECT max(r.sample_id) FROM ring r),
         last_sample_time = (SELECT max(r.sample_time) FROM ring r),
         samples_archived = s.samples_archived + c.kept,
         samples_skipped = s.samples_skipped + c.seen - c.kept,
         rows_archived = s.rows_archived + c.rows,
         samples_lost = s.samples_lost + coalesce(c.samples_lost, 0),
         rows_lost = s.rows_lost + c.rows_lost,
         last_archive_time = now(),
         rolled_until = greatest(coalesce(s.rolled_until, g.lo), g.hi),
         hours_rolled_until = g.hhi
    FROM hid, counts c, roll_range g
   WHERE c.seen > 0
  RETURNING s.last_sample_time)
SELECT c.seen::int8, c.kept::int8, c.rows::int8,
       coalesce(c.samples_lost, 0)::int8, c.rows_lost::int8,
       c.seen >= $2, (SELECT max(u.last_sample_time) FROM upd u)
  FROM counts c
$sql$;
REVOKE EXECUTE ON FUNCTION pgsentinel_archive_step_sql() FROM PUBLIC;

-- The partitioned tables of the archive, with the retention that drops
-- their partitions: raw (pgsentinel_archive.retention), minute
-- (minute_retention) or hour (hour_retention), and whether they are
-- partitioned by a date (day) rather than by a time (sample_time, bucket).
-- Raw and minute tables have a partition a day, hour tables one a month.
CREATE FUNCTION pgsentinel_archive_partitioned()
RETURNS TABLE (parent name, retention text, by_date boolean)
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
SELECT * FROM (VALUES ('pgsentinel_archive_batch'::name, 'raw'::text, false),
              ('pgsentinel_archive_session', 'raw', true),
              ('pgsentinel_archive_text', 'raw', true),
              ('pgsentinel_archive_statement_batch', 'raw', false),
              ('pgsentinel_archive_statement_text', 'raw', true),
              ('pgsentinel_rollup_minute_batch', 'minute', false),
              ('pgsentinel_rollup_minute_observed', 'minute', false),
              ('pgsentinel_rollup_session_minute_batch', 'minute', false),
              ('pgsentinel_rollup_blocking_minute_batch', 'minute', false),
              ('pgsentinel_rollup_hour', 'hour', false),
              ('pgsentinel_rollup_hour_observed', 'hour', false),
              ('pgsentinel_rollup_session_hour', 'hour', false),
              ('pgsentinel_rollup_blocking_hour', 'hour', false)) v;
END;
REVOKE EXECUTE ON FUNCTION pgsentinel_archive_partitioned() FROM PUBLIC;

-- The partitions the archive needs, from the day from_day to tomorrow (UTC),
-- in the schema nsp, as DDL to run in order.  Each row: a statement, the
-- partition's name, and for a partition to make, its parent and the
-- parent's DEFAULT partition (NULL if none); and whether the partition is
-- needed now (its range has begun).  A relation of a partition's name that
-- is not that partition (attached to its parent, with the parent's owner)
-- was created by another role: it is never taken for ours, and its DDL is
-- an error that names it (docs/security.md).  A new partition keeps no
-- privilege that the schema's default privileges give other roles: it is
-- read through its parent, whose privileges and visibility rules apply.
--
-- A batch's row is toasted once it passes 2 kB (a minute's batch at a
-- sample a second): its rows' payload goes out of line, its samples'
-- (a few hundred bytes, compressed already) stay in the row.
--
-- A partition is made apart, then attached: ATTACH PARTITION takes a lock
-- on the parent that neither readers nor inserts wait for, nor it for
-- them, where CREATE TABLE ... PARTITION OF takes an exclusive one: it
-- would wait for the longest report reading the archive, with every new
-- reader and the archive's steps queued behind it, and could deadlock
-- with a repository's apply worker inserting into two parents.  Where the
-- parent has a DEFAULT partition (a repository's landing partitions),
-- ATTACH also locks that one exclusively; the archiver then leaves the
-- partition for a later pass unless it is needed now (archive_step.c).
CREATE FUNCTION pgsentinel_archive_partitions_to_make(from_day date, nsp oid)
RETURNS TABLE (ddl text, partition_name text, parent oid,
               default_partition oid, needed boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RETURN QUERY EXECUTE $q$
WITH nspname AS (SELECT n.nspname AS s FROM pg_namespace n WHERE n.oid = $2),
 days AS (
  SELECT d::date AS day
    FROM generate_series($1::timestamp,
                         timezone('UTC', now())::date + 1, '1 day') d),
 want AS (
  SELECT p.parent, p.parent || '_' || to_char(d.day, 'YYYYMMDD') AS name,
         d.day <= timezone('UTC', now())::date AS needed,
         CASE WHEN p.by_date THEN d.day::text
              ELSE timezone('UTC', d.day::timestamp)::text END AS lo,
         CASE WHEN p.by_date THEN (d.day + 1)::text
              ELSE timezone('UTC', (d.day + 1)::timestamp)::text END AS hi
    FROM days d, @extschema@.pgsentinel_archive_partitioned() p
   WHERE p.retention <> 'hour'
  UNION ALL
  SELECT DISTINCT p.parent,
         p.parent || '_' || to_char(d.day, 'YYYYMM'),
         date_trunc('month', d.day) <= timezone('UTC', now())::date,
         timezone('UTC', date_trunc('month', d.day::timestamp))::text,
         timezone('UTC', date_trunc('month', d.day::timestamp)
                         + interval '1 month')::text
    FROM days d, @extschema@.pgsentinel_archive_partitioned() p
   WHERE p.retention = 'hour')
SELECT x.ddl, w.name, CASE WHEN c.oid IS NULL THEN pc.oid END,
       nullif(pt.partdefid, 0), w.needed
  FROM nspname, want w
  JOIN pg_class pc ON pc.relname = w.parent AND pc.relnamespace = $2
  JOIN pg_partitioned_table pt ON pt.partrelid = pc.oid
  LEFT JOIN pg_class c ON c.relname = w.name AND c.relnamespace = $2,
       LATERAL (VALUES (1, CASE WHEN c.oid IS NULL
                           THEN format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS
                                        INCLUDING STORAGE INCLUDING COMPRESSION)',
                                       s, w.name, s, w.parent)
                           ELSE format('DO $pgs$BEGIN RAISE EXCEPTION USING
                                        ERRCODE = ''duplicate_table'', MESSAGE = %L; END$pgs$',
                                       format('%I.%I, owned by %s, is in the way of an '
                                              || 'archive partition: drop or rename it',
                                              s, w.name, pg_get_userbyid(c.relowner))) END),
                       (2, CASE WHEN c.oid IS NULL
                           THEN (SELECT format('REVOKE ALL ON TABLE %I.%I FROM %s',
                                               s, w.name,
                                               string_agg(DISTINCT CASE WHEN a.grantee = 0
                                                   THEN 'PUBLIC'
                                                   ELSE quote_ident(pg_get_userbyid(a.grantee))
                                                   END, ', '))
                                   FROM pg_default_acl d, aclexplode(d.defaclacl) a
                                  WHERE d.defaclrole = (SELECT r.oid FROM pg_roles r
                                                         WHERE r.rolname = current_user)
                                    AND d.defaclobjtype = 'r'
                                    AND d.defaclnamespace IN (0, $2)
                                    AND a.grantee <> d.defaclrole
                                 HAVING count(*) > 0) END),
                       (3, CASE WHEN c.oid IS NULL
                           THEN format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I
                                        FOR VALUES FROM (%L) TO (%L)',
                                       s, w.parent, s, w.name, w.lo, w.hi) END)) x(step, ddl)
 WHERE x.ddl IS NOT NULL
   AND NOT EXISTS (SELECT FROM pg_inherits i
                     JOIN pg_class p ON p.oid = i.inhparent
                    WHERE i.inhrelid = c.oid AND p.relname = w.parent
                      AND p.relnamespace = $2 AND p.relowner = c.relowner)
 ORDER BY w.name, x.step$q$
        USING from_day, nsp;
END
$fn$;
REVOKE EXECUTE ON FUNCTION pgsentinel_archive_partitions_to_make(date, oid) FROM PUBLIC;

-- The partitions of the schema nsp past their retention: raw days ending
-- before raw_before, minute rollup days ending before minute_before, hour
-- rollup months ending before hour_before.  Partitions are recognized by
-- their parent and their name's date suffix; other tables attached by a
-- user are left alone.  Returns the DDL (IF EXISTS: one dropped by another
-- session since it was listed is gone), the partition, its parent and the
-- parent's DEFAULT partition (NULL if none).
CREATE FUNCTION pgsentinel_archive_partitions_expired(raw_before date,
                                                      minute_before date,
                                                      hour_before date,
                                                      nsp oid)
RETURNS TABLE (ddl text, partition_oid oid, parent oid, default_partition oid)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RETURN QUERY EXECUTE $q$
SELECT format('DROP TABLE IF EXISTS %I.%I', n.nspname, c.relname), c.oid, p.oid,
       nullif(pt.partdefid, 0)
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  JOIN pg_class p ON p.oid = i.inhparent
  JOIN pg_namespace n ON n.oid = p.relnamespace
  JOIN pg_partitioned_table pt ON pt.partrelid = p.oid
  JOIN @extschema@.pgsentinel_archive_partitioned() l ON l.parent = p.relname
 WHERE p.relnamespace = $4 AND c.relnamespace = $4 AND c.relowner = p.relowner
   AND c.relname = p.relname || '_' || substring(c.relname from '[0-9]+$')
   AND CASE l.retention
       WHEN 'raw' THEN c.relname ~ '_[0-9]{8}$'
            AND to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= $1
       WHEN 'minute' THEN c.relname ~ '_[0-9]{8}$'
            AND to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= $2
       WHEN 'hour' THEN c.relname ~ '_[0-9]{6}$'
            AND (to_date(right(c.relname, 6), 'YYYYMM') + interval '1 month')::date
                <= $3
       END
 ORDER BY c.relname$q$
        USING raw_before, minute_before, hour_before, nsp;
END
$fn$;
REVOKE EXECUTE ON FUNCTION pgsentinel_archive_partitions_expired(date, date, date, oid) FROM PUBLIC;
