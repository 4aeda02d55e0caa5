
-- The rollups as the history views show rows (docs/archive.md): the time
-- per minute and per hour (pgsentinel_ash_minute, pgsentinel_ash_hour), of
-- each session per hour (pgsentinel_ash_session_hour: its client hidden
-- too) and
-- the time observed (pgsentinel_sample_minute, pgsentinel_sample_hour).  Of
-- the time of a role the caller is not a member of (without
-- pg_read_all_stats) they hide what pgsentinel_ash_archive hides of its
-- rows: the wait, the query id and the backend type; the database, the
-- role and the application stay, as in pg_stat_activity.  The reports read
-- them for the whole minutes and hours of a window that the archive holds
-- (40_reports_core.sql).

CREATE VIEW pgsentinel_ash_minute AS
SELECT r.bucket, r.datname, r.usesysid, r.usename, r.application_name,
       CASE WHEN v.visible THEN r.backend_type END AS backend_type,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       CASE WHEN v.visible THEN r.queryid END AS queryid,
       r.db_time, r.rows
  FROM pgsentinel_rollup_minute r
 CROSS JOIN LATERAL (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v;

CREATE VIEW pgsentinel_ash_hour AS
SELECT r.bucket, r.datname, r.usesysid, r.usename, r.application_name,
       CASE WHEN v.visible THEN r.backend_type END AS backend_type,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       CASE WHEN v.visible THEN r.queryid END AS queryid,
       r.db_time, r.rows
  FROM pgsentinel_rollup_hour r
 CROSS JOIN LATERAL (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v;

CREATE VIEW pgsentinel_ash_session_hour AS
SELECT r.bucket, r.pid, r.datname, r.usesysid, r.usename, r.application_name,
       CASE WHEN v.visible THEN r.client_addr END AS client_addr,
       CASE WHEN v.visible THEN r.backend_type END AS backend_type,
       CASE WHEN v.visible THEN r.wait_event_type END AS wait_event_type,
       CASE WHEN v.visible THEN r.wait_event END AS wait_event,
       r.db_time, r.rows, r.last_time
  FROM pgsentinel_rollup_session_hour r
 CROSS JOIN LATERAL (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
                         OR pg_catalog.pg_has_role(r.usesysid, 'USAGE') AS visible) v;

-- The samples' part hides nothing: pgsentinel_sample_archive shows every
-- sample too.
CREATE VIEW pgsentinel_sample_minute AS
SELECT o.bucket, o.samples, o.observed, o.peak
  FROM pgsentinel_rollup_minute_observed o;

CREATE VIEW pgsentinel_sample_hour AS
SELECT o.bucket, o.samples, o.observed, o.peak
  FROM pgsentinel_rollup_hour_observed o;

-- The statements of each day's archived activities, with their last
-- top-level text, for the reports that read only rollups for a statement
-- (which keep its query id, not its text); hidden as in
-- pgsentinel_ash_archive.
CREATE VIEW pgsentinel_statement_archive AS
SELECT a.day, a.activity_id, a.datname, a.usesysid, a.usename, a.application_name,
       CASE WHEN v.visible THEN a.queryid END AS queryid,
       CASE WHEN v.visible THEN a.query_start END AS query_start,
       CASE WHEN v.visible THEN tt.text ELSE '<insufficient privilege>' END AS top_level_query
  FROM pgsentinel_archive_activity a
  LEFT JOIN pgsentinel_archive_text tt
    ON tt.day OPERATOR(pg_catalog.=) a.day
   AND tt.text_id OPERATOR(pg_catalog.=) a.top_level_query_id
 CROSS JOIN LATERAL (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
                         OR pg_catalog.pg_has_role(a.usesysid, 'USAGE') AS visible) v;

GRANT SELECT ON pgsentinel_ash_minute, pgsentinel_ash_hour, pgsentinel_ash_session_hour,
    pgsentinel_sample_minute, pgsentinel_sample_hour, pgsentinel_statement_archive TO PUBLIC;
