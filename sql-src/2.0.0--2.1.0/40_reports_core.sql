
-- Reports (docs/reports.md): one function per classic ASH question, over
-- pgsentinel_ash_history and pgsentinel_sample_history (the ring and the
-- archive), weight-aware.  Every function takes a window [since, until)
-- that defaults to the last hour, and the same filters, NULL meaning "any".
-- Average active sessions (aas) is the DB time of the rows (sum of their
-- weights) over the seconds observed (sum of the samples' weights), and
-- coverage the seconds observed over the seconds of the window: a window
-- the sampler did not see has no aas (NULL), not an aas of 0.
--
-- The functions are SQL-standard bodies, bound when created, with every
-- operator and function qualified (docs/security.md); they read the
-- history views, which apply pg_stat_activity's visibility, so they are
-- for PUBLIC and run with the caller's rights.

-- The window's length in seconds; a NULL or empty window is an error.
-- Immutable (it depends on its arguments only), so that a constant window
-- is checked when planned.
CREATE FUNCTION pgsentinel_window_seconds(since timestamptz, until timestamptz)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF since IS NULL OR until IS NULL THEN
        RAISE EXCEPTION 'the report window needs both ends: since and until may not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Leave since and until out for the last hour, or give both, e.g. since => now() - interval ''15 minutes'', until => now().';
    END IF;
    IF until <= since THEN
        RAISE EXCEPTION 'the report window is empty: since (%) is not before until (%)', since, until
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'since is the start of the window and until its end: swap them.';
    END IF;
    RETURN extract(epoch FROM until - since)::double precision;
END
$$;

-- The name of a dimension, checked: an unknown one is an error that lists
-- the known ones.  NULL is allowed (no split).
CREATE FUNCTION pgsentinel_dimension(dimension text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF dimension IS NULL OR dimension IN ('wait_class', 'wait_event', 'statement',
            'session', 'database', 'role', 'application', 'client',
            'backend_type') THEN
        RETURN dimension;
    END IF;
    RAISE EXCEPTION 'unknown dimension "%"', dimension
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Use one of wait_class, wait_event, statement, session, database, role, application, client, backend_type.';
END
$$;

-- The value of a row for a dimension: wait_event is "class:event" except
-- for CPU, statement the query id, session the pid.
CREATE FUNCTION pgsentinel_dimension_key(
    dimension text, wait_event_type text, wait_event text, queryid bigint,
    pid integer, datname text, usename text, application_name text,
    client_addr text, backend_type text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT CASE
    WHEN dimension OPERATOR(pg_catalog.=) 'wait_class' THEN wait_event_type
    WHEN dimension OPERATOR(pg_catalog.=) 'wait_event' THEN
        CASE WHEN wait_event_type OPERATOR(pg_catalog.=) 'CPU' THEN 'CPU'
             WHEN wait_event_type IS NULL THEN NULL
             ELSE pg_catalog.concat(wait_event_type, ':', wait_event) END
    WHEN dimension OPERATOR(pg_catalog.=) 'statement' THEN queryid::pg_catalog.text
    WHEN dimension OPERATOR(pg_catalog.=) 'session' THEN pid::pg_catalog.text
    WHEN dimension OPERATOR(pg_catalog.=) 'database' THEN datname
    WHEN dimension OPERATOR(pg_catalog.=) 'role' THEN usename
    WHEN dimension OPERATOR(pg_catalog.=) 'application' THEN application_name
    WHEN dimension OPERATOR(pg_catalog.=) 'client' THEN client_addr
    WHEN dimension OPERATOR(pg_catalog.=) 'backend_type' THEN backend_type
END;
END;

-- The bucket of a time series when none is given: the shortest of the
-- usual steps that cuts the window into at most n buckets.
CREATE FUNCTION pgsentinel_auto_bucket(since timestamptz, until timestamptz,
                                       n integer DEFAULT 60)
RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT coalesce(
    (SELECT s.step
       FROM pg_catalog.unnest(ARRAY['1 second', '2 seconds', '5 seconds',
                '10 seconds', '15 seconds', '30 seconds', '1 minute',
                '2 minutes', '5 minutes', '10 minutes', '15 minutes',
                '30 minutes', '1 hour', '2 hours', '3 hours', '6 hours',
                '12 hours', '1 day']::pg_catalog.interval[]) AS s(step)
      WHERE (until OPERATOR(pg_catalog.-) since) OPERATOR(pg_catalog.<=)
            (s.step OPERATOR(pg_catalog.*) greatest(n, 1)::pg_catalog.float8)
      ORDER BY s.step
      LIMIT 1),
    pg_catalog.make_interval(days => pg_catalog.ceil(
        extract(epoch FROM until OPERATOR(pg_catalog.-) since)
        OPERATOR(pg_catalog./) 86400.0
        OPERATOR(pg_catalog./) greatest(n, 1))::pg_catalog.int4));
END;

-- The rows of the history in a window, filtered: the base of every report.
CREATE FUNCTION pgsentinel_ash(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL)
RETURNS SETOF pgsentinel_ash_history
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT h.*
  FROM pgsentinel_ash_history h
 WHERE pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
   AND h.ash_time OPERATOR(pg_catalog.>=) since
   AND h.ash_time OPERATOR(pg_catalog.<) until
   AND (dbname IS NULL OR h.datname OPERATOR(pg_catalog.=) dbname)
   AND (username IS NULL OR h.usename OPERATOR(pg_catalog.=) username)
   AND (application IS NULL OR h.application_name OPERATOR(pg_catalog.=) application)
   AND (client IS NULL OR h.client_addr OPERATOR(pg_catalog.=) client)
   AND (backend IS NULL OR h.backend_type OPERATOR(pg_catalog.=) backend)
   AND (query_id IS NULL OR h.queryid OPERATOR(pg_catalog.=) query_id)
   AND (wait_class IS NULL OR h.wait_event_type OPERATOR(pg_catalog.=) wait_class)
   AND (event IS NULL OR h.wait_event OPERATOR(pg_catalog.=) event)
   AND (session_pid IS NULL OR h.pid OPERATOR(pg_catalog.=) session_pid);
END;

-- The samples of a window, those that found no active session included.
CREATE FUNCTION pgsentinel_samples_in(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now())
RETURNS SETOF pgsentinel_sample_history
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT s.*
  FROM pgsentinel_sample_history s
 WHERE pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
   AND s.sample_time OPERATOR(pg_catalog.>=) since
   AND s.sample_time OPERATOR(pg_catalog.<) until;
END;

-- Average active sessions over a window, in total (by NULL) or split by a
-- dimension; the total has one row even when no session was active.
CREATE FUNCTION pgsentinel_aas(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    by text DEFAULT NULL,
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL)
RETURNS TABLE (
    key text,
    db_time double precision,
    aas double precision,
    pct double precision,
    observed double precision,
    coverage double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH obs AS (
    SELECT coalesce(pg_catalog.sum(s.weight), 0::pg_catalog.float8) AS observed,
           pgsentinel_window_seconds(since, until) AS secs
      FROM pgsentinel_samples_in(since, until) s
     WHERE pgsentinel_dimension(by) IS NOT DISTINCT FROM by
), r AS (
    SELECT pgsentinel_dimension_key(by, h.wait_event_type, h.wait_event,
               h.queryid, h.pid, h.datname, h.usename, h.application_name,
               h.client_addr, h.backend_type) AS key,
           pg_catalog.sum(h.weight) AS db_time
      FROM pgsentinel_ash(since, until, dbname, username, application, client,
                          backend, query_id, wait_class, event, session_pid) h
     GROUP BY 1
), k AS (
    SELECT r.key, r.db_time FROM r WHERE by IS NOT NULL
    UNION ALL
    SELECT NULL, coalesce(pg_catalog.sum(r.db_time), 0::pg_catalog.float8)
      FROM r HAVING by IS NULL
)
SELECT k.key, k.db_time,
       k.db_time OPERATOR(pg_catalog./) NULLIF(o.observed, 0::pg_catalog.float8),
       100::pg_catalog.float8 OPERATOR(pg_catalog.*) k.db_time
           OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(k.db_time) OVER (), 0::pg_catalog.float8),
       o.observed,
       o.observed OPERATOR(pg_catalog./) o.secs
  FROM k CROSS JOIN obs o
 ORDER BY k.db_time DESC, k.key;
END;

-- Average active sessions as a time series: one row per bucket and key
-- (the keys seen in the window, CPU a class of its own), 0 where nothing
-- was active, and the bucket's coverage (0 where the sampler saw nothing).
-- The buckets are aligned on whole multiples of their length; a sample
-- counts in the bucket of its time, so buckets shorter than the sampling
-- period alternate between full ones and ones without data (coverage 0).
CREATE FUNCTION pgsentinel_aas_series(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    bucket interval DEFAULT NULL,
    by text DEFAULT 'wait_class',
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL)
RETURNS TABLE (
    bucket_start timestamptz,
    key text,
    db_time double precision,
    aas double precision,
    observed double precision,
    coverage double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH p AS (
    SELECT coalesce(bucket, pgsentinel_auto_bucket(since, until, 60)) AS step,
           timestamptz '2000-01-01 00:00:00+00' AS origin
     WHERE pgsentinel_window_seconds(since, until) OPERATOR(pg_catalog.>) 0::pg_catalog.float8
       AND pgsentinel_dimension(by) IS NOT DISTINCT FROM by
), b AS (
    SELECT g.b AS bucket_start,
           extract(epoch FROM least(g.b OPERATOR(pg_catalog.+) p.step, until)
                   OPERATOR(pg_catalog.-) greatest(g.b, since))::pg_catalog.float8 AS secs
      FROM p, pg_catalog.generate_series(pg_catalog.date_bin(p.step, since, p.origin),
                                         until OPERATOR(pg_catalog.-) interval '1 microsecond',
                                         p.step) AS g(b)
), obs AS (
    SELECT pg_catalog.date_bin(p.step, s.sample_time, p.origin) AS bucket_start,
           pg_catalog.sum(s.weight) AS observed
      FROM p, pgsentinel_samples_in(since, until) s
     GROUP BY 1
), r AS (
    SELECT pg_catalog.date_bin(p.step, h.ash_time, p.origin) AS bucket_start,
           pgsentinel_dimension_key(by, h.wait_event_type, h.wait_event,
               h.queryid, h.pid, h.datname, h.usename, h.application_name,
               h.client_addr, h.backend_type) AS key,
           pg_catalog.sum(h.weight) AS db_time
      FROM p, pgsentinel_ash(since, until, dbname, username, application, client,
                             backend, query_id, wait_class, event, session_pid) h
     GROUP BY 1, 2
), keys AS (
    SELECT DISTINCT r.key FROM r WHERE by IS NOT NULL
    UNION ALL
    SELECT NULL WHERE by IS NULL OR NOT EXISTS (SELECT 1 FROM r)
)
SELECT b.bucket_start, k.key,
       coalesce(r.db_time, 0::pg_catalog.float8),
       coalesce(r.db_time OPERATOR(pg_catalog./) NULLIF(o.observed, 0::pg_catalog.float8),
                0::pg_catalog.float8),
       coalesce(o.observed, 0::pg_catalog.float8),
       least(coalesce(o.observed, 0::pg_catalog.float8) OPERATOR(pg_catalog./) b.secs,
             1::pg_catalog.float8)
  FROM b CROSS JOIN keys k
  LEFT JOIN obs o ON o.bucket_start OPERATOR(pg_catalog.=) b.bucket_start
  LEFT JOIN (SELECT r.bucket_start, r.key, pg_catalog.sum(r.db_time) AS db_time
               FROM r GROUP BY 1, 2) r
    ON r.bucket_start OPERATOR(pg_catalog.=) b.bucket_start
   AND r.key IS NOT DISTINCT FROM k.key
 ORDER BY 1, 2;
END;

-- AAS, peak and coverage over the usual trailing windows ending at until.
-- peak: the most sessions active at one sample (weights divided by the
-- sample's own).
CREATE FUNCTION pgsentinel_periods(
    until timestamptz DEFAULT pg_catalog.now(),
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL)
RETURNS TABLE (
    period text,
    window_start timestamptz,
    window_end timestamptz,
    db_time double precision,
    aas double precision,
    peak double precision,
    observed double precision,
    coverage double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH w AS (
    SELECT v.label, v.len, v.ord,
           pgsentinel_periods.until OPERATOR(pg_catalog.-) v.len AS since
      FROM (VALUES ('1 minute', interval '1 minute', 1),
                   ('5 minutes', interval '5 minutes', 2),
                   ('15 minutes', interval '15 minutes', 3),
                   ('1 hour', interval '1 hour', 4),
                   ('6 hours', interval '6 hours', 5),
                   ('1 day', interval '1 day', 6),
                   ('7 days', interval '7 days', 7),
                   ('1 month', interval '1 month', 8)) AS v(label, len, ord)
), s AS (
    SELECT x.sample_time, x.sample_id, x.weight
      FROM pgsentinel_samples_in(pgsentinel_periods.until OPERATOR(pg_catalog.-) interval '1 month',
                                 pgsentinel_periods.until) x
), r AS (
    SELECT h.ash_time, h.sample_id, pg_catalog.sum(h.weight) AS db_time
      FROM pgsentinel_ash(pgsentinel_periods.until OPERATOR(pg_catalog.-) interval '1 month',
                          pgsentinel_periods.until, dbname, username,
                          application, client, backend, query_id, wait_class,
                          event, session_pid) h
     GROUP BY 1, 2
), per_sample AS (
    SELECT s.sample_time, s.weight, coalesce(r.db_time, 0::pg_catalog.float8) AS db_time
      FROM s LEFT JOIN r
        ON r.ash_time OPERATOR(pg_catalog.=) s.sample_time
       AND r.sample_id OPERATOR(pg_catalog.=) s.sample_id
)
SELECT w.label, w.since, pgsentinel_periods.until,
       coalesce(pg_catalog.sum(ps.db_time), 0::pg_catalog.float8),
       pg_catalog.sum(ps.db_time) OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(ps.weight), 0::pg_catalog.float8),
       pg_catalog.max(ps.db_time OPERATOR(pg_catalog./) NULLIF(ps.weight, 0::pg_catalog.float8)),
       coalesce(pg_catalog.sum(ps.weight), 0::pg_catalog.float8),
       coalesce(pg_catalog.sum(ps.weight), 0::pg_catalog.float8) OPERATOR(pg_catalog./)
           extract(epoch FROM pgsentinel_periods.until OPERATOR(pg_catalog.-) w.since)::pg_catalog.float8
  FROM w LEFT JOIN per_sample ps
    ON ps.sample_time OPERATOR(pg_catalog.>=) w.since
 GROUP BY w.label, w.since, w.ord
 ORDER BY w.ord;
END;
