
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

CREATE VIEW pgsentinel_sample_archive AS
SELECT a.sample_id, a.sample_time, a.sample_period, a.weight,
       a.active_sessions, 'archive'::pg_catalog.text AS source
  FROM pgsentinel_archive_sample a;

CREATE VIEW pgsentinel_sample_history AS
SELECT a.sample_id, a.sample_time, a.sample_period, a.weight,
       a.active_sessions, a.source
  FROM pgsentinel_sample_archive a
 WHERE a.sample_time OPERATOR(pg_catalog.<)
       (SELECT x.split_time FROM pgsentinel_history_split x)
UNION ALL
SELECT p.sample_id, p.sample_time, p.sample_period, p.sample_period,
       p.active_sessions, 'ring'::pg_catalog.text
  FROM pgsentinel_samples() p
 WHERE p.sample_time OPERATOR(pg_catalog.>=) (SELECT x.split_time FROM pgsentinel_history_split x);

CREATE VIEW pgsentinel_ash_archive AS
SELECT s.sample_time AS ash_time,
       se.datid, se.datname, se.pid,
       CASE WHEN v.visible THEN se.leader_pid END AS leader_pid,
       se.usesysid, se.usename, se.application_name,
       CASE WHEN v.visible THEN se.client_addr END AS client_addr,
       CASE WHEN v.visible THEN se.client_hostname END AS client_hostname,
       CASE WHEN v.visible THEN se.client_port END AS client_port,
       CASE WHEN v.visible THEN se.backend_start END AS backend_start,
       CASE WHEN v.visible THEN a.xact_start END AS xact_start,
       CASE WHEN v.visible THEN a.query_start END AS query_start,
       CASE WHEN v.visible THEN a.state_change END AS state_change,
       CASE WHEN v.visible THEN w.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN w.wait_event END AS wait_event,
       CASE WHEN v.visible THEN a.state END AS state,
       a.backend_xid, a.backend_xmin,
       CASE WHEN v.visible THEN pgsentinel_text_fill(tt.text, a.top_level_query_values)
            ELSE '<insufficient privilege>' END AS top_level_query,
       CASE WHEN v.visible THEN pgsentinel_text_fill(qt.text, a.query_values)
            ELSE '<insufficient privilege>' END AS query,
       CASE WHEN v.visible THEN a.cmdtype END AS cmdtype,
       CASE WHEN v.visible THEN a.queryid END AS queryid,
       CASE WHEN v.visible THEN a.nested_queryid END AS nested_queryid,
       CASE WHEN v.visible THEN se.backend_type END AS backend_type,
       coalesce(u.blockers, 0) AS blockers,
       u.blockerpid,
       CASE WHEN pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
              OR pg_catalog.pg_has_role(u.blocker_usesysid, 'USAGE')
            THEN u.blocker_state END AS blocker_state,
       s.sample_id,
       coalesce(u.blocking_pids, '{}')::pg_catalog.int4[] AS blocking_pids,
       s.sample_period,
       u.blocker_usesysid,
       pgsentinel_load_weight(a.state, u.sweight) AS weight,
       'archive'::pg_catalog.text AS source,
       s.blockers IS NOT NULL AS blocked_sample
  FROM pgsentinel_archive_sample s
  -- a sample's rows, each with the keys of its activity: the activities
  -- are joined to these rows, not to the samples first.  The planner
  -- would otherwise join every sample of a day with every activity of the
  -- day and filter the pairs (a window of a minute at 10-ms sampling:
  -- 18 s instead of 0.05), as it estimates a freshly filled partition
  -- from statistics taken while it was nearly empty.  OFFSET 0 keeps the
  -- day, and the sample's weight, where only these rows carry them: no
  -- clause joins an activity to a sample but through its rows.
 CROSS JOIN LATERAL (
       SELECT pg_catalog.timezone('UTC', s.sample_time)::pg_catalog.date AS sday,
              s.weight AS sweight, x.*
         FROM ROWS FROM (pg_catalog.unnest(s.activity_ids),
                         pg_catalog.unnest(s.wait_event_ids),
                         pg_catalog.unnest(s.blockers),
                         pg_catalog.unnest(s.blockerpids),
                         pg_catalog.unnest(s.blocker_states),
                         pg_catalog.unnest(s.blocker_usesysids),
                         pg_catalog.unnest(s.blocking_pids))
              AS x(activity_id, wait_event_id, blockers, blockerpid, blocker_state,
                   blocker_usesysid, blocking_pids)
       OFFSET 0) u
  JOIN pgsentinel_archive_activity a
    ON a.day OPERATOR(pg_catalog.=) u.sday
   AND a.activity_id OPERATOR(pg_catalog.=) u.activity_id
  JOIN pgsentinel_archive_session se
    ON se.day OPERATOR(pg_catalog.=) a.day
   AND se.session_id OPERATOR(pg_catalog.=) a.session_id
  LEFT JOIN pgsentinel_archive_wait_event w
    ON w.wait_event_id OPERATOR(pg_catalog.=) u.wait_event_id
  LEFT JOIN pgsentinel_archive_text tt
    ON tt.day OPERATOR(pg_catalog.=) a.day
   AND tt.text_id OPERATOR(pg_catalog.=) a.top_level_query_id
  LEFT JOIN pgsentinel_archive_text qt
    ON qt.day OPERATOR(pg_catalog.=) a.day
   AND qt.text_id OPERATOR(pg_catalog.=) a.query_id
 CROSS JOIN LATERAL (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
                         OR pg_catalog.pg_has_role(se.usesysid, 'USAGE') AS visible) v;

CREATE VIEW pgsentinel_ash_history AS
SELECT ash_time, datid, datname, pid, leader_pid, usesysid,
       usename, application_name, client_addr, client_hostname,
       client_port, backend_start, xact_start, query_start,
       state_change, wait_event_type, wait_event, state,
       backend_xid, backend_xmin, top_level_query, query, cmdtype,
       queryid, nested_queryid, backend_type, blockers, blockerpid,
       blocker_state, sample_id, blocking_pids, sample_period,
       blocker_usesysid, weight, source, blocked_sample
  FROM pgsentinel_ash_archive
 WHERE ash_time OPERATOR(pg_catalog.<)
       (SELECT x.split_time FROM pgsentinel_history_split x)
UNION ALL
SELECT r.ash_time, r.datid, r.datname, r.pid, r.leader_pid, r.usesysid,
       r.usename, r.application_name, r.client_addr, r.client_hostname,
       r.client_port, r.backend_start, r.xact_start, r.query_start,
       r.state_change, r.wait_event_type, r.wait_event, r.state,
       r.backend_xid, r.backend_xmin, r.top_level_query, r.query, r.cmdtype,
       r.queryid, r.nested_queryid, r.backend_type, r.blockers, r.blockerpid,
       r.blocker_state, r.sample_id, r.blocking_pids, r.sample_period,
       r.blocker_usesysid, r.weight, 'ring'::pg_catalog.text,
       NULL::pg_catalog.bool
  FROM pgsentinel_ash_ring r
 WHERE r.ash_time OPERATOR(pg_catalog.>=) (SELECT x.split_time FROM pgsentinel_history_split x);

GRANT SELECT ON pgsentinel_history_split, pgsentinel_sample_archive, pgsentinel_sample_history,
    pgsentinel_ash_archive, pgsentinel_ash_history TO PUBLIC;
