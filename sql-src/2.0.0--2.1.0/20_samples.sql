
-- Weights (docs/archive.md): every row of the history stands for its
-- sample's period of one session's time, and every sample is listed,
-- those that found no active session too, so that average active sessions
-- is exact at any sampling period: sum(sample_period) / seconds observed.
--
-- weight: the DB time the row stands for, its sample's period if the
-- session was active, 0 if it was sampled idle in transaction (with
-- track_idle_trans) or because it blocked a sampled session (pgsentinel
-- samples every blocker, whatever its state, so that it is named whole).
-- blocker_usesysid: the blocker's role, which blocker_state's visibility
-- depends on (the archive keeps it with the row).
ALTER FOREIGN TABLE pgsentinel_ash_ring
    ADD COLUMN sample_period double precision,
    ADD COLUMN blocker_usesysid oid,
    ADD COLUMN weight double precision;

-- pg_active_session_history shows the new columns of the foreign table.
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
