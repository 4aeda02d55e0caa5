
-- pg_active_session_history shows every column of the foreign table.
-- It shows what pgsentinel 1.4 did: active sessions, and sessions idle in
-- transaction while track_idle_trans is on (then also those sampled
-- because they blocked: a row does not say why it was sampled); not the
-- other idle blockers (weight 0), which the history views show.
CREATE OR REPLACE VIEW pg_active_session_history AS
  SELECT * FROM pgsentinel_ash_ring
   WHERE weight OPERATOR(pg_catalog.>) 0::pg_catalog.float8
      OR (pg_catalog.current_setting('pgsentinel_ash.track_idle_trans', true)
          OPERATOR(pg_catalog.=) 'on'::pg_catalog.text
          AND (state OPERATOR(pg_catalog.=) 'idle in transaction'::pg_catalog.text
               OR state OPERATOR(pg_catalog.=) 'idle in transaction (aborted)'::pg_catalog.text));
GRANT SELECT ON pg_active_session_history TO PUBLIC;

-- The samples the ring holds, oldest first: time, period, and the rows
-- each wrote (active_sessions).
CREATE FUNCTION pgsentinel_samples(
    OUT sample_id bigint,
    OUT sample_time timestamptz,
    OUT sample_period double precision,
    OUT active_sessions integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgsentinel_samples'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- The id of the history the rings hold, which the archive's watermark
-- refers to (a crash or a promotion starts a new history).
CREATE FUNCTION pgsentinel_history_id()
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgsentinel_history_id'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- The time from which the ring holds every row of its samples; the
-- history views (35_history_views.sql) read the archive before it.
CREATE FUNCTION pgsentinel_ring_start()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'pgsentinel_ring_start'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
