
-- Incidents and what is unusual (docs/reports.md): the questions a DBA
-- asks before any other, answered from the same history as the reports.

-- The checks of pgsentinel_incidents()'s own arguments (a WHERE clause).
CREATE FUNCTION pgsentinel_check_incidents(min_excess double precision,
                                           min_samples integer, gap interval)
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF min_excess IS NULL OR min_excess < 0 THEN
        RAISE EXCEPTION 'min_excess must be 0 or more, not %', coalesce(min_excess::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'min_excess is how many active sessions above normal a sample must have at least, e.g. min_excess => 1.';
    END IF;
    IF min_samples IS NULL OR min_samples < 1 THEN
        RAISE EXCEPTION 'min_samples must be 1 or more, not %', coalesce(min_samples::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'min_samples is how many departing samples in a row an incident needs, e.g. min_samples => 3.';
    END IF;
    IF gap IS NULL OR gap < interval '0' THEN
        RAISE EXCEPTION 'gap must be an interval of 0 or more, not %', coalesce(gap::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'gap is the longest stretch without a departing sample inside one incident, e.g. gap => ''10 seconds''.';
    END IF;
    RETURN true;
END
$$;

-- The incidents of a window: the stretches where the number of active
-- sessions departed from the window's normal.  Normal is the median of
-- the samples' active sessions over the window (each sample weighing the
-- time it stands for; pgsentinel's own workers are among the sessions
-- here, their steps being short), and a sample departs when
-- it has more than the median plus min_excess sessions, or plus three
-- standard deviations as the median absolute deviation estimates them,
-- whichever is more (robust to the incidents themselves, as long as they
-- fill less than half the window).  A run is at least min_samples
-- departing samples one after the other; a shorter one is a blip, left
-- out altogether, so that the blips of a quiet baseline neither make an
-- incident nor stretch or join the ones they are near.  Runs closer
-- together than gap (or three times the time a sample stands for) make
-- one incident, shown only when its average is above the threshold.
-- started is the first sample of its first run (the incident began
-- within the sampling period before it), ended the last one of its last
-- run plus the time it stands for.  For each: its average and peak
-- active sessions, and what the report would put first for its stretch:
-- the top wait event, statement and application, and the root blocker
-- behind which the most time was spent, named whole.
CREATE FUNCTION pgsentinel_incidents(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    min_excess double precision DEFAULT 1,
    min_samples integer DEFAULT 3,
    gap interval DEFAULT '10 seconds',
    server text DEFAULT NULL)
RETURNS TABLE (
    incident bigint,
    started timestamptz,
    ended timestamptz,
    duration interval,
    samples bigint,
    baseline double precision,
    threshold double precision,
    aas double precision,
    peak double precision,
    top_wait text,
    top_wait_pct double precision,
    queryid bigint,
    query text,
    application text,
    root_blocker integer,
    blocker text)
LANGUAGE sql STABLE
SET jit = off
BEGIN ATOMIC
WITH s AS MATERIALIZED (
    SELECT x.sample_time, x.weight, x.active_sessions::pg_catalog.float8 AS n
      FROM pgsentinel_samples_in(since, until, server) x
     WHERE pgsentinel_check_incidents(min_excess, min_samples, gap)
       AND pgsentinel_check_request(since, until, NULL::pg_catalog.int4, NULL::pg_catalog.int4,
                                    NULL::pg_catalog.text, NULL::pg_catalog.text,
                                    NULL::pg_catalog.text, server)
), g AS (
    -- each count of active sessions with the time its samples stand for
    -- (an archived sample stands for keep_one_in of the ring's), summed
    -- as whole microseconds, so that an even split is found as one
    -- whatever the order of the sums: the counts are few, so the median
    -- and its deviation are found among them, not among the samples
    SELECT s.n, pg_catalog.sum(pg_catalog.round(s.weight OPERATOR(pg_catalog.*) 1e6::pg_catalog.float8)::pg_catalog.int8) AS w
      FROM s GROUP BY s.n
), m AS (
    -- the median, each count weighing its time
    SELECT c.n AS median
      FROM (SELECT g.n,
                   pg_catalog.sum(g.w) OVER (ORDER BY g.n ROWS UNBOUNDED PRECEDING) AS cw,
                   pg_catalog.sum(g.w) OVER () AS tw
              FROM g) c
     WHERE c.cw OPERATOR(pg_catalog.*) 2::pg_catalog.numeric OPERATOR(pg_catalog.>=) c.tw
     ORDER BY c.n LIMIT 1
), th AS (
    -- and the median absolute deviation, weighted alike
    SELECT m.median,
           m.median OPERATOR(pg_catalog.+) greatest(min_excess,
               (3::pg_catalog.float8 OPERATOR(pg_catalog.*) 1.4826::pg_catalog.float8)
               OPERATOR(pg_catalog.*)
               (SELECT c.d
                  FROM (SELECT x.d,
                               pg_catalog.sum(x.w) OVER (ORDER BY x.d ROWS UNBOUNDED PRECEDING) AS cw,
                               pg_catalog.sum(x.w) OVER () AS tw
                          FROM (SELECT pg_catalog.abs(g.n OPERATOR(pg_catalog.-) m.median) AS d,
                                       pg_catalog.sum(g.w) AS w
                                  FROM g GROUP BY 1) x) c
                 WHERE c.cw OPERATOR(pg_catalog.*) 2::pg_catalog.numeric OPERATOR(pg_catalog.>=) c.tw
                 ORDER BY c.d LIMIT 1)) AS threshold
      FROM m
), d AS (
    -- each sample, whether it departs, and whether the one before did
    SELECT s.sample_time, s.weight, s.n,
           s.n OPERATOR(pg_catalog.>) th.threshold AS departs,
           pg_catalog.lag(s.n OPERATOR(pg_catalog.>) th.threshold)
               OVER (ORDER BY s.sample_time) AS prev_departs,
           pg_catalog.lag(s.sample_time) OVER (ORDER BY s.sample_time) AS prev_time,
           pg_catalog.lag(s.weight) OVER (ORDER BY s.sample_time) AS prev_weight
      FROM s, th
), runs AS (
    -- runs: departing samples one after the other, no sample that does
    -- not depart between them and no hole of more than three samples
    SELECT d.sample_time, d.weight, d.departs,
           pg_catalog.count(*) FILTER (
               WHERE d.departs
                 AND (d.prev_departs IS NOT TRUE
                      OR (d.sample_time OPERATOR(pg_catalog.-) d.prev_time) OPERATOR(pg_catalog.>)
                         pg_catalog.make_interval(secs => 3::pg_catalog.float8
                                                  OPERATOR(pg_catalog.*) d.prev_weight)))
               OVER (ORDER BY d.sample_time) AS run
      FROM d
), held AS (
    -- a run of fewer than min_samples samples is a blip: neither an
    -- incident nor a part of one, so that blips before or after an
    -- episode do not stretch it
    SELECT r.sample_time, r.weight,
           pg_catalog.lag(r.sample_time) OVER (ORDER BY r.sample_time) AS prev_time,
           pg_catalog.lag(r.weight) OVER (ORDER BY r.sample_time) AS prev_weight
      FROM (SELECT runs.sample_time, runs.weight,
                   pg_catalog.count(*) OVER (PARTITION BY runs.run) AS len
              FROM runs
             WHERE runs.departs) r
     WHERE r.len OPERATOR(pg_catalog.>=) min_samples
), chained AS (
    -- runs closer together than gap make one incident
    SELECT h.sample_time, h.weight,
           pg_catalog.count(*) FILTER (
               WHERE h.prev_time IS NULL
                  OR (h.sample_time OPERATOR(pg_catalog.-) h.prev_time) OPERATOR(pg_catalog.>)
                     greatest(gap, pg_catalog.make_interval(secs => 3::pg_catalog.float8
                                                             OPERATOR(pg_catalog.*) h.prev_weight)))
               OVER (ORDER BY h.sample_time) AS chain
      FROM held h
), inc AS (
    SELECT pg_catalog.min(c.sample_time) AS started,
           pg_catalog.max(c.sample_time OPERATOR(pg_catalog.+)
                          pg_catalog.make_interval(secs => c.weight)) AS ended
      FROM chained c
     GROUP BY c.chain
), fig AS (
    -- the figures of each incident's whole stretch; one whose average is
    -- not above the threshold (runs chained over quieter stretches) is not
    -- shown
    SELECT i.started, i.ended,
           pg_catalog.count(*) FILTER (WHERE d.departs) AS samples,
           pg_catalog.sum(d.n OPERATOR(pg_catalog.*) d.weight)
               OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(d.weight), 0::pg_catalog.float8) AS aas,
           pg_catalog.max(d.n) AS peak
      FROM inc i JOIN d ON d.sample_time OPERATOR(pg_catalog.>=) i.started
                       AND d.sample_time OPERATOR(pg_catalog.<) i.ended
     GROUP BY i.started, i.ended
), shown AS (
    SELECT pg_catalog.row_number() OVER (ORDER BY f.started) AS incident,
           f.started, f.ended, f.samples, f.aas, f.peak
      FROM fig f, th
     WHERE f.aas OPERATOR(pg_catalog.>) th.threshold
)
SELECT i.incident, i.started, i.ended, i.ended OPERATOR(pg_catalog.-) i.started,
       i.samples, th.median, th.threshold, i.aas, i.peak,
       w.key, w.pct, q.key::pg_catalog.int8, q.description, a.key,
       b.pid,
       pg_catalog.concat_ws(', ', b.usename, 'application ' OPERATOR(pg_catalog.||) b.application_name,
                            b.state, 'in a transaction since ' OPERATOR(pg_catalog.||) b.xact_start::pg_catalog.text,
                            b.query)
  FROM shown i CROSS JOIN th
  LEFT JOIN LATERAL (SELECT t.key, t.pct FROM pgsentinel_top(i.started, i.ended, 'wait_event'::pg_catalog.text,
                                                             1, server => server) t) w ON true
  LEFT JOIN LATERAL (SELECT t.key, t.description FROM pgsentinel_top(i.started, i.ended, 'statement'::pg_catalog.text,
                                                                    1, server => server) t) q ON true
  LEFT JOIN LATERAL (SELECT t.key FROM pgsentinel_top(i.started, i.ended, 'application'::pg_catalog.text,
                                                      1, server => server) t) a ON true
  LEFT JOIN LATERAL (SELECT t.pid, t.usename, t.application_name, t.state, t.xact_start, t.query
                       FROM pgsentinel_blocking_trees(i.started, i.ended, server => server) t
                      WHERE t.depth OPERATOR(pg_catalog.=) 0
                      ORDER BY t.db_time DESC, t.pid LIMIT 1) b ON true
 ORDER BY i.incident;
END;

-- The checks of pgsentinel_unusual()'s own arguments (a WHERE clause).
CREATE FUNCTION pgsentinel_check_unusual(until timestamptz, weeks integer,
                                         min_aas double precision)
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF until IS NULL THEN
        RAISE EXCEPTION 'until may not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'until is the end of the hour to judge; leave it out for now().';
    END IF;
    IF weeks IS NULL OR weeks < 1 OR weeks > 52 THEN
        RAISE EXCEPTION 'weeks must be between 1 and 52, not %', coalesce(weeks::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'weeks is how many weeks before are the usual, e.g. weeks => 4.';
    END IF;
    IF min_aas IS NULL OR min_aas < 0 THEN
        RAISE EXCEPTION 'min_aas must be 0 or more, not %', coalesce(min_aas::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'min_aas is the least rise in average active sessions worth a flag, e.g. min_aas => 0.1.';
    END IF;
    RETURN true;
END
$$;

-- The figures of pgsentinel_unusual(), planned on their own and run
-- without JIT: inlined into the caller's query, the estimated costs of
-- the load of every week's hour passed jit_above_cost, and compiling the
-- plan took longer than answering.
CREATE FUNCTION pgsentinel_unusual_keys(until timestamptz, weeks integer,
                                        min_aas double precision, server text)
RETURNS TABLE (
    dimension text,
    key text,
    description text,
    aas double precision,
    usual double precision,
    spread double precision,
    ratio double precision,
    weeks_seen integer,
    unusual boolean)
LANGUAGE sql STABLE
SET jit = off
BEGIN ATOMIC
WITH wk AS MATERIALIZED (
    -- week 0: the hour being judged; 1..weeks: the same hour before
    SELECT g.k,
           until OPERATOR(pg_catalog.-) interval '1 hour'
              OPERATOR(pg_catalog.-) pg_catalog.make_interval(weeks => g.k) AS lo,
           until OPERATOR(pg_catalog.-) pg_catalog.make_interval(weeks => g.k) AS hi
      FROM pg_catalog.generate_series(0, weeks) AS g(k)
     WHERE pgsentinel_check_unusual(until, weeks, min_aas)
       AND pgsentinel_check_request(until OPERATOR(pg_catalog.-) interval '1 hour', until,
                                    NULL::pg_catalog.int4, NULL::pg_catalog.int4,
                                    NULL::pg_catalog.text, NULL::pg_catalog.text,
                                    NULL::pg_catalog.text, server)
), obs AS MATERIALIZED (
    SELECT wk.k, wk.lo, wk.hi, o.observed
      FROM wk CROSS JOIN LATERAL (
           SELECT pg_catalog.sum(x.observed) AS observed
             FROM pgsentinel_observed(wk.lo, wk.hi, 'hour'::pg_catalog.text, server) x) o
     WHERE o.observed OPERATOR(pg_catalog.>) 0::pg_catalog.float8
), v AS MATERIALIZED (
    SELECT d.dim, obs.k, a.key, a.aas
      FROM obs CROSS JOIN (VALUES ('wait_class'::pg_catalog.text), ('statement'::pg_catalog.text)) AS d(dim)
     CROSS JOIN LATERAL pgsentinel_aas(obs.lo, obs.hi, d.dim, server => server) a
     WHERE a.key IS NOT NULL
), seen AS (
    SELECT pg_catalog.count(*) FILTER (WHERE obs.k OPERATOR(pg_catalog.>) 0)::pg_catalog.int4 AS n,
           pg_catalog.bool_or(obs.k OPERATOR(pg_catalog.=) 0) AS now_seen
      FROM obs
), described AS MATERIALIZED (
    SELECT t.key, t.description
      FROM pgsentinel_top(until OPERATOR(pg_catalog.-) interval '1 hour', until,
                          'statement'::pg_catalog.text, 100000, server => server) t
), keys AS (
    SELECT DISTINCT v.dim, v.key FROM v
), stats AS MATERIALIZED (
    -- a week without the key had none of it: 0
    SELECT keys.dim, keys.key,
           coalesce(pg_catalog.max(v.aas) FILTER (WHERE obs.k OPERATOR(pg_catalog.=) 0),
                    0::pg_catalog.float8) AS aas,
           pg_catalog.avg(coalesce(v.aas, 0::pg_catalog.float8))
               FILTER (WHERE obs.k OPERATOR(pg_catalog.>) 0) AS usual,
           coalesce(pg_catalog.stddev_pop(coalesce(v.aas, 0::pg_catalog.float8))
                        FILTER (WHERE obs.k OPERATOR(pg_catalog.>) 0),
                    0::pg_catalog.float8) AS spread
      FROM keys CROSS JOIN obs
      LEFT JOIN v ON v.k OPERATOR(pg_catalog.=) obs.k
                 AND v.dim OPERATOR(pg_catalog.=) keys.dim
                 AND v.key OPERATOR(pg_catalog.=) keys.key
     GROUP BY keys.dim, keys.key
)
SELECT st.dim, st.key,
       CASE WHEN st.dim OPERATOR(pg_catalog.=) 'statement' THEN
           (SELECT d.description FROM described d WHERE d.key OPERATOR(pg_catalog.=) st.key)
       END,
       st.aas, st.usual, st.spread,
       st.aas OPERATOR(pg_catalog./) NULLIF(st.usual, 0::pg_catalog.float8),
       seen.n,
       coalesce(seen.n OPERATOR(pg_catalog.>) 0 AND seen.now_seen
                AND (st.aas OPERATOR(pg_catalog.-) st.usual) OPERATOR(pg_catalog.>=) min_aas
                AND (st.aas OPERATOR(pg_catalog.>=) (2::pg_catalog.float8 OPERATOR(pg_catalog.*) st.usual)
                     OR ((st.aas OPERATOR(pg_catalog.-) st.usual) OPERATOR(pg_catalog.>)
                         (3::pg_catalog.float8 OPERATOR(pg_catalog.*) st.spread)
                         AND st.spread OPERATOR(pg_catalog.>) 0::pg_catalog.float8)), false)
  FROM stats st CROSS JOIN seen
 ORDER BY 9 DESC, (st.aas OPERATOR(pg_catalog.-) st.usual) DESC, st.dim, st.key;
END;

-- What is unusual now: the load of the hour before until (by default now),
-- against the same hour of each of the weeks before it (those the
-- history observed), per wait class and per statement.  usual is the
-- average of those weeks' AAS, spread their standard deviation; a key is
-- unusual when it has at least min_aas more AAS than usual and at least
-- twice as much, or three spreads more: a wait class that doubled, a
-- statement that was not there.  All keys of the hour are returned, the
-- unusual ones first; weeks_seen says how many weeks the usual is of (0:
-- nothing to compare with, nothing unusual).
CREATE FUNCTION pgsentinel_unusual(
    until timestamptz DEFAULT pg_catalog.now(),
    weeks integer DEFAULT 4,
    min_aas double precision DEFAULT 0.1,
    server text DEFAULT NULL)
RETURNS TABLE (
    dimension text,
    key text,
    description text,
    aas double precision,
    usual double precision,
    spread double precision,
    ratio double precision,
    weeks_seen integer,
    unusual boolean)
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT u.dimension, u.key, u.description, u.aas, u.usual, u.spread, u.ratio,
       u.weeks_seen, u.unusual
  FROM pgsentinel_unusual_keys(until, weeks, min_aas, server) u
 WHERE pgsentinel_check_unusual(until, weeks, min_aas)
   AND pgsentinel_check_request(until OPERATOR(pg_catalog.-) interval '1 hour', until,
                                NULL::pg_catalog.int4, NULL::pg_catalog.int4,
                                NULL::pg_catalog.text, NULL::pg_catalog.text,
                                NULL::pg_catalog.text, server)
 ORDER BY u.unusual DESC, (u.aas OPERATOR(pg_catalog.-) u.usual) DESC, u.dimension, u.key;
END;

