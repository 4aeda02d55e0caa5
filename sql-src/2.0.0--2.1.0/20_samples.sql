
-- Weights (docs/archive.md): every row of the history stands for its
-- sample's period of one session's time, and every sample is listed,
-- those that found no active session too, so that average active sessions
-- is exact at any sampling period: sum(sample_period) / seconds observed.
ALTER FOREIGN TABLE pgsentinel_ash_ring ADD COLUMN sample_period double precision;

CREATE OR REPLACE VIEW pg_active_session_history AS
  SELECT * FROM pgsentinel_ash_ring;

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
