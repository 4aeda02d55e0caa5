
-- The archive as the ring's views show it (pgsentinel_ash_archive,
-- pgsentinel_sample_archive), and one history over the ring and the
-- archive (docs/archive.md): the ring
-- from pgsentinel_ring_start() on, the archive before it, so that no sample is counted
-- twice.  That is the first sample whose rows the ring holds whole
-- (the one of its oldest row may have lost some); after a crash or a
-- promotion (another history) not before what the archive already holds.
-- Every row has its weight: the seconds of one session's active time it
-- stands for (0 for a session sampled while idle in transaction).  Average active sessions over a window = sum(weight) / seconds;
-- pgsentinel_sample_history gives the seconds observed (sum of its
-- weights), which is less than the window when the sampler did not run.

-- blocked_sample: whether some row of the row's sample waited for another
-- session (false: nobody did; NULL in the ring, which does not say), so
-- that a reader of blocking trees skips the other samples whole.

-- The DB time a row of the archive stands for: its sample's weight if
-- the session was active, 0 if it was idle (in transaction): the rule of
-- the ring's weight column, for rows stored with their state's name.
CREATE FUNCTION pgsentinel_load_weight(state text, weight double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT CASE WHEN state OPERATOR(pg_catalog.=) 'active'
              OR state OPERATOR(pg_catalog.=) 'fastpath function call'
            THEN weight ELSE 0::pg_catalog.float8 END;
END;

-- Where the history changes source: samples before split_time are read
-- from the archive, those from it on from the ring ('infinity' when the
-- ring is empty).  A view, so that the watermark it reads is read with
-- its owner's rights; the reports (40_reports_core.sql) cut their windows
-- at the same point.  On a standby the archive is the primary's
-- (replicated): the history of a standby is its own ring alone.
-- rollup_until: the rollups hold the minutes before it, the rows the rest;
-- where the archiver has not set it (an archive restored from a dump, which
-- does not keep the watermark), the end of the last minute rolled up.
CREATE VIEW pgsentinel_history_split AS
SELECT CASE WHEN pg_catalog.pg_is_in_recovery()
            THEN '-infinity'::pg_catalog.timestamptz
            ELSE coalesce(greatest(pgsentinel_ring_start(),
                         (SELECT st.last_sample_time OPERATOR(pg_catalog.+) interval '1 microsecond'
                            FROM pgsentinel_archive_state st
                           WHERE st.history_id IS DISTINCT FROM pgsentinel_history_id())),
                'infinity') END AS split_time,
       coalesce((SELECT st.rolled_until FROM pgsentinel_archive_state st),
                (SELECT pg_catalog.max(o.bucket) OPERATOR(pg_catalog.+) interval '1 minute'
                   FROM pgsentinel_rollup_minute_observed o),
                (SELECT pg_catalog.max(o.bucket) OPERATOR(pg_catalog.+) interval '1 hour'
                   FROM pgsentinel_rollup_hour_observed o),
                '-infinity') AS rollup_until;

-- The rows of a batch (30_archive.sql) given its sample arrays and its
-- rows' payload, each with its sample's time, id, period, weight and
-- whether a row of the sample was blocked (sweight: the weight of the
-- sample, whatever the row's state), their times read back; sessions,
-- waits and texts as their ids (src/archive/batch_rows.c).  The archive's
-- views and the fleet's read batches through it.
CREATE FUNCTION pgsentinel_batch_rows(
    first_time timestamptz, sample_ids bigint[], sample_us bigint[],
    sample_periods double precision[], weights double precision[],
    sample_blocked boolean[], row_data bytea)
RETURNS TABLE (
    --@columns batch_row decl
)
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_batch_rows';

-- The archive's samples and rows read out of their batches
-- (30_archive.sql), with the batch's first and last sample times
-- (batch_start, batch_end): a reader of a window [lo, hi) names its batches
-- with batch_start >= the start of lo's UTC day (a batch is within a
-- day), batch_start < hi and batch_end >= lo, which the planner uses to
-- skip the partitions and blocks of other days and times; the times of
-- the samples themselves are known only once their batch is read.
CREATE VIEW pgsentinel_archive_samples_by_batch AS
SELECT b.first_time AS batch_start, b.last_time AS batch_end, x.sample_id,
       pgsentinel_us_after(b.first_time, x.us) AS sample_time,
       x.sample_period, x.weight, x.active_sessions, x.blocked
  FROM pgsentinel_archive_batch b
 CROSS JOIN LATERAL pgsentinel_batch_samples(b.sample_data) a
 CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(a.sample_ids),
                               pg_catalog.unnest(a.sample_us),
                               pg_catalog.unnest(a.sample_periods),
                               pg_catalog.unnest(a.weights),
                               pg_catalog.unnest(a.active_sessions),
                               pg_catalog.unnest(a.sample_blocked))
       AS x(sample_id, us, sample_period, weight, active_sessions, blocked);

-- The archive's samples as the ring's (pgsentinel_samples()) show them; reads pgsentinel_archive_samples_by_batch.
CREATE VIEW pgsentinel_sample_archive AS
SELECT a.sample_id, a.sample_time, a.sample_period, a.weight,
       a.active_sessions, 'archive'::pg_catalog.text AS source
  FROM pgsentinel_archive_samples_by_batch a;

-- The history views, each with the batch of its archived rows (batch_start,
-- batch_end: see pgsentinel_archive_samples_by_batch; a row of the ring is its own
-- batch, at its time): a reader of a window names the batches to read as
-- it would of the archive alone, and the ring's rows pass the same test.
CREATE VIEW pgsentinel_history_samples_by_batch AS
SELECT a.batch_start, a.batch_end, a.sample_id, a.sample_time, a.sample_period,
       a.weight, a.active_sessions, 'archive'::pg_catalog.text AS source
  FROM pgsentinel_archive_samples_by_batch a
 WHERE a.sample_time OPERATOR(pg_catalog.<)
       (SELECT x.split_time FROM pgsentinel_history_split x)
UNION ALL
SELECT p.sample_time, p.sample_time, p.sample_id, p.sample_time, p.sample_period,
       p.sample_period, p.active_sessions, 'ring'::pg_catalog.text
  FROM pgsentinel_samples() p
 WHERE p.sample_time OPERATOR(pg_catalog.>=) (SELECT x.split_time FROM pgsentinel_history_split x);

-- Every sample, archive then ring; reads pgsentinel_history_samples_by_batch.
CREATE VIEW pgsentinel_sample_history AS
SELECT h.sample_id, h.sample_time, h.sample_period, h.weight,
       h.active_sessions, h.source
  FROM pgsentinel_history_samples_by_batch h;

-- A batch's rows, each with its sample: the rows are read with their
-- batch, and their sessions, waits and texts found by key for that batch
-- (in its LATERAL subquery, OFFSET 0: the planner, which knows nothing of
-- how many rows a batch holds, joins them there by hash or by index on the
-- batch's day; joined to the rows of a whole window it expected two rows
-- and looked each row's texts up by nested loop: an hour's rows 1.5 s
-- instead of 0.2).
CREATE VIEW pgsentinel_archive_rows_by_batch AS
SELECT b.first_time AS batch_start, b.last_time AS batch_end, u.sample_time AS ash_time,
       u.datid, u.datname, u.pid,
       CASE WHEN v.visible THEN u.leader_pid END AS leader_pid,
       u.usesysid, u.usename, u.application_name,
       CASE WHEN v.visible THEN u.client_addr END AS client_addr,
       CASE WHEN v.visible THEN u.client_hostname END AS client_hostname,
       CASE WHEN v.visible THEN u.client_port END AS client_port,
       CASE WHEN v.visible THEN u.backend_start END AS backend_start,
       CASE WHEN v.visible THEN u.xact_start END AS xact_start,
       CASE WHEN v.visible THEN u.query_start END AS query_start,
       CASE WHEN v.visible THEN u.state_change END AS state_change,
       CASE WHEN v.visible THEN u.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN u.wait_event END AS wait_event,
       CASE WHEN v.visible THEN u.state END AS state,
       u.backend_xid, u.backend_xmin,
       CASE WHEN v.visible THEN pgsentinel_text_fill(u.top_level_template, u.top_level_query_values)
            ELSE '<insufficient privilege>' END AS top_level_query,
       CASE WHEN v.visible THEN pgsentinel_text_fill(u.query_template, u.query_values)
            ELSE '<insufficient privilege>' END AS query,
       CASE WHEN v.visible THEN u.cmdtype END AS cmdtype,
       CASE WHEN v.visible THEN u.queryid END AS queryid,
       CASE WHEN v.visible THEN u.nested_queryid END AS nested_queryid,
       CASE WHEN v.visible THEN u.backend_type END AS backend_type,
       coalesce(u.blockers, 0) AS blockers,
       u.blockerpid,
       CASE WHEN (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
              OR pg_catalog.pg_has_role(u.blocker_usesysid, 'USAGE')
            THEN u.blocker_state END AS blocker_state,
       u.sample_id,
       coalesce(u.blocking_pids, '{}')::pg_catalog.int4[] AS blocking_pids,
       u.sample_period,
       u.blocker_usesysid,
       pgsentinel_load_weight(u.state, u.sweight) AS weight,
       'archive'::pg_catalog.text AS source,
       u.blocked_sample,
       u.lock_type, u.lock_relation, u.lock_target, u.lock_mode,
       u.blocker_lock_modes
  FROM pgsentinel_archive_batch b
 CROSS JOIN LATERAL (
       SELECT x.*, se.datid, se.datname, se.pid, se.leader_pid, se.usesysid,
              se.usename, se.application_name, se.client_addr,
              se.client_hostname, se.client_port, se.backend_start,
              se.backend_type, w.wait_event_type, w.wait_event,
              tt.text AS top_level_template, qt.text AS query_template
         FROM (SELECT y.*
                 FROM pgsentinel_batch_samples(b.sample_data) a,
                      pgsentinel_batch_rows(b.first_time, a.sample_ids, a.sample_us,
                          a.sample_periods, a.weights, a.sample_blocked, b.row_data) y
               OFFSET 0) x
         JOIN pgsentinel_archive_session se
           ON se.day OPERATOR(pg_catalog.=) pg_catalog.timezone('UTC', b.first_time)::pg_catalog.date
          AND se.session_id OPERATOR(pg_catalog.=) x.session_id
         LEFT JOIN pgsentinel_archive_wait_event w
           ON w.wait_event_id OPERATOR(pg_catalog.=) x.wait_event_id
         LEFT JOIN pgsentinel_archive_text tt
           ON tt.day OPERATOR(pg_catalog.=) pg_catalog.timezone('UTC', b.first_time)::pg_catalog.date
          AND tt.text_id OPERATOR(pg_catalog.=) x.top_level_query_id
         LEFT JOIN pgsentinel_archive_text qt
           ON qt.day OPERATOR(pg_catalog.=) pg_catalog.timezone('UTC', b.first_time)::pg_catalog.date
          AND qt.text_id OPERATOR(pg_catalog.=) x.query_id
       OFFSET 0) u
 CROSS JOIN LATERAL (SELECT (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
                         OR pg_catalog.pg_has_role(u.usesysid, 'USAGE') AS visible) v;

-- The archive's rows as pg_active_session_history shows the ring's; reads pgsentinel_archive_rows_by_batch.
CREATE VIEW pgsentinel_ash_archive AS
SELECT
       --@columns history names
  FROM pgsentinel_archive_rows_by_batch;

-- The archive's rows before the split point, the ring's after it; reads pgsentinel_archive_rows_by_batch, pgsentinel_ash_ring.
CREATE VIEW pgsentinel_history_rows_by_batch AS
SELECT batch_start, batch_end,
       --@columns history names
  FROM pgsentinel_archive_rows_by_batch
 WHERE ash_time OPERATOR(pg_catalog.<)
       (SELECT x.split_time FROM pgsentinel_history_split x)
UNION ALL
SELECT r.ash_time, r.ash_time,
       --@columns history names prefix=r.
  FROM (SELECT y.*, 'ring'::pg_catalog.text AS source,
               NULL::pg_catalog.bool AS blocked_sample
          FROM pgsentinel_ash_ring y) r
 WHERE r.ash_time OPERATOR(pg_catalog.>=) (SELECT x.split_time FROM pgsentinel_history_split x);

-- Every row, archive then ring; reads pgsentinel_history_rows_by_batch.
CREATE VIEW pgsentinel_ash_history AS
SELECT
       --@columns history names
  FROM pgsentinel_history_rows_by_batch;

GRANT SELECT ON pgsentinel_history_split, pgsentinel_archive_samples_by_batch,
    pgsentinel_sample_archive, pgsentinel_history_samples_by_batch, pgsentinel_sample_history,
    pgsentinel_archive_rows_by_batch, pgsentinel_ash_archive, pgsentinel_history_rows_by_batch,
    pgsentinel_ash_history TO PUBLIC;
