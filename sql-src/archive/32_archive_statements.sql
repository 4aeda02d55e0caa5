
-- The statements history in the archive (docs/archive.md): per reading of
-- the statements ring, the deltas since the statement's previous reading,
-- as pg_stat_statements_history_deltas() computes them (reset-aware), and
-- the statement's normalized text, copied from pg_stat_statements once per
-- day.  The archiver (src/archive/archive_statements.c) writes both and moves the
-- statements' own watermark in one statement, exactly once.
--
-- Readings in which no counter moved (a statement still running: its
-- counters only move when an execution ends) are not stored: they add
-- nothing to any sum.  Stored deltas that are zero are NULL (each NULL
-- costs a bit instead of eight bytes); a reset interval has reset = true
-- and every delta NULL.  The views show the deltas as the helper does.

-- The readings of one archiving step and UTC day whose counters moved, as
-- one row (a batch, as the samples are kept), one per statement (userid,
-- dbid, queryid, toplevel, as pg_stat_statements keys it) and reading:
-- row_data, a versioned payload that only the extension's C writes and
-- reads (src/archive/batch_format.c), of the reading columns ash_us,
-- prev_us, sample_id, queryid, calls, rows, exec_ms, plans, plan_ms,
-- shared_blks_hit, shared_blks_read, shared_blks_dirtied,
-- shared_blks_written, temp_blks_read, temp_blks_written, wal_bytes,
-- userid, dbid, toplevel, reset (pgsentinel_statement_batch_pack() makes
-- it of them, element i of each the batch's i-th reading), the readings
-- ordered by statement, then time, so that a statement's ids repeat and
-- compress.  ash_us: the reading's time, in microseconds after
-- first_time; prev_us: the time from the statement's previous reading to
-- this one.  The integer columns are packed (see pgsentinel_archive_batch),
-- the payload compressed with zstd.  Partitioned by day on first_time: a
-- batch never spans two UTC days.
CREATE TABLE pgsentinel_archive_statement_batch (
    first_time timestamptz NOT NULL,
    last_time timestamptz NOT NULL,
    row_data bytea NOT NULL
) PARTITION BY RANGE (first_time);
CREATE INDEX ON pgsentinel_archive_statement_batch USING brin (first_time);
-- (compressed by pgsentinel_statement_batch_pack() already)
ALTER TABLE pgsentinel_archive_statement_batch ALTER COLUMN row_data SET STORAGE EXTERNAL;

-- A statements batch's payload made of its reading columns (above; NULL:
-- a column of NULLs), and the payload of its readings taken after a time
-- (a fleet's landing of a batch it has the first readings of;
-- src/archive/batch_format.c).
-- Makes a statements batch's payload of its readings' columns (src/archive/batch_format.c).
CREATE FUNCTION pgsentinel_statement_batch_pack(
    --@columns reading_data decl
)
RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_statement_batch_pack';

-- Reads a statements payload; returns the one of its readings after a time.
CREATE FUNCTION pgsentinel_statement_batch_keep(first_time timestamptz,
                                                row_data bytea,
                                                after timestamptz)
RETURNS bytea
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_statement_batch_keep';

-- The readings of a statements batch as rows (src/archive/statement_rows.c):
-- what pgsentinel_statements_archive shows (the fleet's view reads its
-- servers' batches through the same function), with their batch's first
-- and last reading times, batch_start and batch_end: a reader of [lo, hi) names its batches with batch_start >=
-- date_trunc('day', lo, 'UTC') AND batch_start < hi AND batch_end >= lo,
-- which the planner finds the partitions and blocks of.
CREATE FUNCTION pgsentinel_statement_rows(first_time timestamptz, row_data bytea)
RETURNS TABLE (
    --@columns reading decl
)
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_statement_rows';

-- Reads pgsentinel_archive_statement_batch (its payloads, through pgsentinel_statement_rows()).
CREATE VIEW pgsentinel_archive_statement_delta AS
SELECT u.*, b.first_time AS batch_start, b.last_time AS batch_end
  FROM pgsentinel_archive_statement_batch b,
       pgsentinel_statement_rows(b.first_time, b.row_data) u;

-- The text of each statement archived on a day, in pgsentinel_archive_text
-- (the samples' texts: same day partitions, same retention, deduplicated
-- by hash, so that a text both have is stored once).  Looked up by
-- (day, statement); dropped with the day's deltas.
CREATE TABLE pgsentinel_archive_statement_text (
    day date NOT NULL,
    queryid bigint NOT NULL,
    dbid oid NOT NULL,
    userid oid NOT NULL,
    text_id integer,            -- NULL: no text was found that day
    PRIMARY KEY (day, queryid, dbid, userid)
) PARTITION BY RANGE (day);

REVOKE ALL ON pgsentinel_archive_statement_batch, pgsentinel_archive_statement_delta,
    pgsentinel_archive_statement_text FROM PUBLIC;

-- The statements' archiving step, one statement (src/archive/archive_statements.c
-- runs it with format(pgsentinel_archive_statements_step_sql(), schema,
-- source)): it archives the readings of the statements ring after the
-- statements' watermark as per-interval deltas, copies the texts of the
-- statements it has not archived yet that day, and moves the watermark.
--
-- Exactly once, as for the samples (pgsentinel_archive_step_sql()): the
-- watermark is read FOR UPDATE and written in the same statement as the
-- rows.  It is a watermark of its own because the statements worker writes
-- a sample's readings some time after the sampler wrote the sample; the
-- readings are appended in the order of their sample ids, so every reading
-- after the watermark is one not archived yet.
--
-- A reading's deltas are taken from the statement's previous reading in the
-- ring, over the whole ring, as pg_stat_statements_history_deltas() does:
-- the archive holds exactly the rows the helper returns for those readings,
-- minus those in which no counter moved.
--
-- Texts are read with pg_stat_statements(true), which reads the query-text
-- file: only when a statement of the step has no text yet for the day,
-- never by the sampler or the statements worker.  A text pg_stat_statements
-- no longer has is taken from the archive's latest day that has it.
--
-- %1$I is the extension's schema, %2$s the rows of pg_stat_statements with
-- their texts (queryid, dbid, userid, query); $1 the oldest time the
-- retention keeps: older readings are passed over (their partitions are
-- gone).  Returns the readings seen, rows stored, rows not stored because
-- nothing moved, and texts copied.
CREATE FUNCTION pgsentinel_archive_statements_step_sql()
RETURNS text
LANGUAGE sql IMMUTABLE
RETURN $sql$
WITH st AS MATERIALIZED (
  SELECT s.statements_history_id, s.statements_last_sample_id, s.statements_last_time
    FROM %1$I.pgsentinel_archive_state s FOR UPDATE),
 hid AS MATERIALIZED (SELECT %1$I.pgsentinel_history_id() AS id),
 ring AS MATERIALIZED (
  SELECT h.ash_time, h.sample_id, h.userid, h.dbid, h.queryid, h.toplevel,
         h.calls, h.rows, h.total_exec_time, h.plans, h.total_plan_time,
         h.shared_blks_hit, h.shared_blks_read, h.shared_blks_dirtied,
         h.shared_blks_written, h.temp_blks_read, h.temp_blks_written,
         h.wal_bytes,
         CASE WHEN st.statements_history_id = hid.id
              THEN h.sample_id > st.statements_last_sample_id
              ELSE h.ash_time > coalesce(st.statements_last_time, '-infinity') END
           AS is_new
    FROM %1$I.pg_stat_statements_history() h, st, hid
   WHERE h.queryid IS NOT NULL),
 fresh AS MATERIALIZED (SELECT * FROM ring r WHERE r.is_new),
-- the readings of the statements read anew, with the one before each
 readings AS MATERIALIZED (
  SELECT r.*,
         lag(r.ash_time) OVER w AS p_time, lag(r.calls) OVER w AS p_calls,
         lag(r.rows) OVER w AS p_rows,
         lag(r.total_exec_time) OVER w AS p_exec,
         lag(r.plans) OVER w AS p_plans,
         lag(r.total_plan_time) OVER w AS p_plan,
         lag(r.shared_blks_hit) OVER w AS p_hit,
         lag(r.shared_blks_read) OVER w AS p_read,
         lag(r.shared_blks_dirtied) OVER w AS p_dirtied,
         lag(r.shared_blks_written) OVER w AS p_written,
         lag(r.temp_blks_read) OVER w AS p_temp_read,
         lag(r.temp_blks_written) OVER w AS p_temp_written,
         lag(r.wal_bytes) OVER w AS p_wal_bytes
    FROM ring r
   WHERE (r.userid, r.dbid, r.queryid, r.toplevel) IN
         (SELECT f.userid, f.dbid, f.queryid, f.toplevel FROM fresh f)
  WINDOW w AS (PARTITION BY r.userid, r.dbid, r.queryid, r.toplevel
               ORDER BY r.ash_time, r.sample_id)),
 deltas AS MATERIALIZED (
  SELECT r.*,
         (r.calls < r.p_calls OR r.rows < r.p_rows
          OR r.total_exec_time < r.p_exec OR r.plans < r.p_plans
          OR r.total_plan_time < r.p_plan
          OR r.shared_blks_hit < r.p_hit OR r.shared_blks_read < r.p_read
          OR r.shared_blks_dirtied < r.p_dirtied
          OR r.shared_blks_written < r.p_written
          OR r.temp_blks_read < r.p_temp_read
          OR r.temp_blks_written < r.p_temp_written
          OR r.wal_bytes < r.p_wal_bytes) AS was_reset,
         (r.calls, r.rows, r.total_exec_time, r.plans, r.total_plan_time,
          r.shared_blks_hit, r.shared_blks_read, r.shared_blks_dirtied,
          r.shared_blks_written, r.temp_blks_read, r.temp_blks_written,
          r.wal_bytes)
         IS NOT DISTINCT FROM
         (r.p_calls, r.p_rows, r.p_exec, r.p_plans, r.p_plan, r.p_hit,
          r.p_read, r.p_dirtied, r.p_written, r.p_temp_read,
          r.p_temp_written, r.p_wal_bytes) AS unchanged
    FROM readings r
   WHERE r.is_new AND r.p_time IS NOT NULL AND r.ash_time >= $1),
 kept AS MATERIALIZED (
  SELECT * FROM deltas d WHERE d.was_reset OR NOT d.unchanged),
 ins AS (
  INSERT INTO %1$I.pgsentinel_archive_statement_batch (first_time, last_time,
         row_data)
  SELECT min(x.first_time), max(x.ash_time),
         %1$I.pgsentinel_statement_batch_pack(
         %1$I.pgsentinel_pack(array_agg(%1$I.pgsentinel_us_between(x.first_time, x.ash_time))),
         %1$I.pgsentinel_pack(array_agg(%1$I.pgsentinel_us_between(x.p_time, x.ash_time))),
         %1$I.pgsentinel_pack(array_agg(x.sample_id)), array_agg(x.queryid),
         %1$I.pgsentinel_pack(array_agg(x.calls)), %1$I.pgsentinel_pack(array_agg(x.rows)),
         array_agg(x.exec_ms), %1$I.pgsentinel_pack(array_agg(x.plans)),
         array_agg(x.plan_ms), %1$I.pgsentinel_pack(array_agg(x.shared_blks_hit)),
         %1$I.pgsentinel_pack(array_agg(x.shared_blks_read)),
         %1$I.pgsentinel_pack(array_agg(x.shared_blks_dirtied)),
         %1$I.pgsentinel_pack(array_agg(x.shared_blks_written)),
         %1$I.pgsentinel_pack(array_agg(x.temp_blks_read)),
         %1$I.pgsentinel_pack(array_agg(x.temp_blks_written)),
         %1$I.pgsentinel_pack(array_agg(x.wal_bytes)),
         array_agg(x.userid), array_agg(x.dbid), array_agg(x.toplevel),
         array_agg(x.reset))
    FROM (SELECT y.*, min(y.ash_time) OVER (PARTITION BY y.day) AS first_time
            FROM (SELECT timezone('UTC', k.ash_time)::date AS day, k.ash_time,
                         k.p_time, k.sample_id, k.queryid,
                         CASE WHEN NOT k.was_reset THEN nullif(k.calls - k.p_calls, 0) END AS calls,
                         CASE WHEN NOT k.was_reset THEN nullif(k.rows - k.p_rows, 0) END AS rows,
                         CASE WHEN NOT k.was_reset THEN nullif(k.total_exec_time - k.p_exec, 0) END AS exec_ms,
                         CASE WHEN NOT k.was_reset THEN nullif(k.plans - k.p_plans, 0) END AS plans,
                         CASE WHEN NOT k.was_reset THEN nullif(k.total_plan_time - k.p_plan, 0) END AS plan_ms,
                         CASE WHEN NOT k.was_reset THEN nullif(k.shared_blks_hit - k.p_hit, 0) END AS shared_blks_hit,
                         CASE WHEN NOT k.was_reset THEN nullif(k.shared_blks_read - k.p_read, 0) END AS shared_blks_read,
                         CASE WHEN NOT k.was_reset THEN nullif(k.shared_blks_dirtied - k.p_dirtied, 0) END AS shared_blks_dirtied,
                         CASE WHEN NOT k.was_reset THEN nullif(k.shared_blks_written - k.p_written, 0) END AS shared_blks_written,
                         CASE WHEN NOT k.was_reset THEN nullif(k.temp_blks_read - k.p_temp_read, 0) END AS temp_blks_read,
                         CASE WHEN NOT k.was_reset THEN nullif(k.temp_blks_written - k.p_temp_written, 0) END AS temp_blks_written,
                         CASE WHEN NOT k.was_reset
                              THEN nullif(least(k.wal_bytes - k.p_wal_bytes, 9223372036854775807), 0)::int8 END AS wal_bytes,
                         k.userid, k.dbid, k.toplevel, k.was_reset AS reset
                    FROM kept k) y
           ORDER BY y.day, y.userid, y.dbid, y.queryid, y.toplevel, y.ash_time,
                    y.sample_id) x
   GROUP BY x.day
  RETURNING 1),
-- the statements with no text yet for the day
 missing AS MATERIALIZED (
  SELECT DISTINCT timezone('UTC', k.ash_time)::date AS day, k.queryid,
         k.dbid, k.userid
    FROM kept k
   WHERE NOT EXISTS (SELECT FROM %1$I.pgsentinel_archive_statement_text m
                      WHERE m.day = timezone('UTC', k.ash_time)::date
                        AND m.queryid = k.queryid AND m.dbid = k.dbid
                        AND m.userid = k.userid)),
-- the text file is read only when a text is missing
 pgss AS MATERIALIZED (
  SELECT p.queryid, p.dbid, p.userid, p.query
    FROM %2$s p
   WHERE (SELECT count(*) FROM missing) > 0 AND p.query IS NOT NULL
     AND (p.queryid, p.dbid, p.userid) IN
         (SELECT m.queryid, m.dbid, m.userid FROM missing m)),
 found AS MATERIALIZED (
  SELECT m.day, m.queryid, m.dbid, m.userid,
         coalesce((SELECT p.query FROM pgss p
                    WHERE p.queryid = m.queryid AND p.dbid = m.dbid
                      AND p.userid = m.userid LIMIT 1),
                  (SELECT t.text
                     FROM %1$I.pgsentinel_archive_statement_text o
                     JOIN %1$I.pgsentinel_archive_text t
                       ON t.day = o.day AND t.text_id = o.text_id
                    WHERE o.queryid = m.queryid AND o.dbid = m.dbid
                      AND o.userid = m.userid
                    ORDER BY o.day DESC LIMIT 1)) AS text
    FROM missing m),
 txt_all AS MATERIALIZED (
  SELECT i.day, i.text, i.text_id
    FROM (SELECT array_agg(f.day) AS days, array_agg(f.text) AS texts
            FROM found f WHERE f.text IS NOT NULL) a,
         %1$I.pgsentinel_text_ids(a.days, a.texts) i),
-- a statement without a text anywhere gets none for the day: looked for once
 map AS (
  INSERT INTO %1$I.pgsentinel_archive_statement_text (day, queryid, dbid,
         userid, text_id)
  SELECT f.day, f.queryid, f.dbid, f.userid, a.text_id
    FROM found f LEFT JOIN txt_all a ON a.day = f.day AND a.text = f.text
  RETURNING text_id),
-- the watermark, with the counts
 counts AS MATERIALIZED (
  SELECT (SELECT count(DISTINCT f.sample_id) FROM fresh f) AS readings,
         (SELECT count(*) FROM fresh f) AS seen,
         (SELECT count(*) FROM kept) AS kept,
         (SELECT count(*) FROM deltas d WHERE NOT d.was_reset
                                          AND d.unchanged) AS unchanged,
         (SELECT count(*) FROM map WHERE text_id IS NOT NULL) AS texts),
 upd AS (
  UPDATE %1$I.pgsentinel_archive_state s
     SET statements_history_id = hid.id,
         statements_last_sample_id = (SELECT max(f.sample_id) FROM fresh f),
         statements_last_time = (SELECT max(f.ash_time) FROM fresh f),
         statements_readings_archived = s.statements_readings_archived + c.readings,
         statements_rows_archived = s.statements_rows_archived + c.kept,
         statements_rows_unchanged = s.statements_rows_unchanged + c.unchanged
    FROM hid, counts c
   WHERE c.seen > 0
  RETURNING 1)
SELECT c.readings::int8, c.kept::int8, c.unchanged::int8, c.texts::int8
  FROM counts c
$sql$;
REVOKE EXECUTE ON FUNCTION pgsentinel_archive_statements_step_sql() FROM PUBLIC;
