
-- The fleet at a glance (docs/fleet.md, "The overview"): every server's
-- load over a window in one table, from the servers' rollups only, read
-- for all the servers of a node in one statement (the foreign partitions
-- of a node are read by postgres_fdw, several nodes' at once through
-- asynchronous append), and the state of its feed.  A server's figures
-- end where its rollups end (as_of, its rolled_until): what came after is
-- in its rows, which its report reads.

-- The rollup sums of a set of servers over [since, until), in buckets of
-- step: the whole hours before each server's
-- hours_rolled_until from the hour rollups when step is whole hours, the
-- other minutes before its rolled_until from the minute rollups; buckets
-- on the clock (from 2000-01-01 UTC), so that a bucket of hours is made of
-- whole hours, and the first may be cut by since.  kind
-- 'o': a bucket's observed seconds (v) and peak (the most active
-- sessions of a sample); 'w': DB time (v) by wait class; 'e': by wait
-- event; 'q': by query id.  pgsentinel's own workers' time is left out,
-- as the reports leave it out of the load.  $1: the servers' ids; $6,
-- $7: no minute in [$6, $7) is read (hours of every server there: the
-- minutes of a day are a hundred times its hours); run by
-- pgsentinel_fleet_overview().
CREATE FUNCTION pgsentinel_fleet_overview_sql()
RETURNS text
LANGUAGE sql IMMUTABLE
RETURN $sql$
WITH s AS (
    SELECT f.server_id, coalesce(f.rolled_until, '-infinity') AS ru,
           coalesce(f.hours_rolled_until, '-infinity') AS hru
      FROM %1$I.pgsentinel_fleet_status f
     WHERE f.server_id = ANY ($1)
), hours AS (
    -- the hours read from the hour rollups
    SELECT s.server_id, h.h
      FROM s, generate_series(date_trunc('hour', $2, 'UTC'), $3, interval '1 hour') AS h(h)
     WHERE $5 AND h.h >= $2 AND h.h + interval '1 hour' <= $3
       AND h.h + interval '1 hour' <= s.hru
), hr AS (
    SELECT r.server_id, r.bucket, r.wait_event_type, r.wait_event, r.queryid,
           sum(r.db_time) AS db_time
      FROM %1$I.pgsentinel_fleet_rollup_hour r
      JOIN hours ON hours.server_id = r.server_id AND hours.h = r.bucket
     WHERE r.server_id = ANY ($1) AND r.bucket >= date_trunc('hour', $2, 'UTC') AND r.bucket < $3
       AND NOT %1$I.pgsentinel_own_worker(r.backend_type)
     GROUP BY 1, 2, 3, 4, 5
), ho AS (
    SELECT r.server_id, r.bucket, r.observed, r.peak
      FROM %1$I.pgsentinel_fleet_rollup_hour_observed r
      JOIN hours ON hours.server_id = r.server_id AND hours.h = r.bucket
     WHERE r.server_id = ANY ($1) AND r.bucket >= date_trunc('hour', $2, 'UTC') AND r.bucket < $3
), mr AS (
    SELECT r.server_id, r.bucket, r.wait_event_type, r.wait_event, r.queryid,
           sum(r.db_time) AS db_time
      FROM %1$I.pgsentinel_fleet_rollup_minute r
      JOIN s ON s.server_id = r.server_id
     WHERE r.server_id = ANY ($1) AND r.bucket >= $2 AND r.bucket < $3 AND r.bucket < s.ru
       AND (r.bucket < $6 OR r.bucket >= $7)
       AND NOT %1$I.pgsentinel_own_worker(r.backend_type)
       AND NOT EXISTS (SELECT FROM hours WHERE hours.server_id = r.server_id
                                           AND hours.h = date_trunc('hour', r.bucket, 'UTC'))
     GROUP BY 1, 2, 3, 4, 5
), mo AS (
    SELECT r.server_id, r.bucket, sum(r.observed) AS observed, max(r.peak) AS peak
      FROM %1$I.pgsentinel_fleet_rollup_minute_observed r
      JOIN s ON s.server_id = r.server_id
     WHERE r.server_id = ANY ($1) AND r.bucket >= $2 AND r.bucket < $3 AND r.bucket < s.ru
       AND (r.bucket < $6 OR r.bucket >= $7)
       AND NOT EXISTS (SELECT FROM hours WHERE hours.server_id = r.server_id
                                           AND hours.h = date_trunc('hour', r.bucket, 'UTC'))
     GROUP BY 1, 2
), load AS (
    SELECT x.server_id, date_bin($4, x.bucket, timestamptz '2000-01-01 00:00:00+00') AS b, x.wait_event_type,
           x.wait_event, x.queryid, sum(x.db_time) AS db_time
      FROM (SELECT * FROM hr UNION ALL SELECT * FROM mr) x
     GROUP BY 1, 2, 3, 4, 5
)
SELECT o.server_id, 'o'::text, date_bin($4, o.bucket, timestamptz '2000-01-01 00:00:00+00'), NULL::text, NULL::text, NULL::int8,
       sum(o.observed), max(o.peak)
  FROM (SELECT * FROM ho UNION ALL SELECT * FROM mo) o
 GROUP BY 1, 3
UNION ALL
SELECT l.server_id, 'w', l.b, l.wait_event_type, NULL, NULL, sum(l.db_time), NULL
  FROM load l GROUP BY 1, 3, 4
UNION ALL
SELECT l.server_id, 'e', NULL, l.wait_event_type, l.wait_event, NULL, sum(l.db_time), NULL
  FROM load l GROUP BY 1, 4, 5
UNION ALL
SELECT l.server_id, 'q', NULL, NULL, NULL, l.queryid, sum(l.db_time), NULL
  FROM load l WHERE l.queryid IS NOT NULL GROUP BY 1, 6
$sql$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_overview_sql() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgsentinel_fleet_overview_sql() TO pg_read_all_stats;

-- Every server of the fleet over a window, the busiest first: its average
-- active sessions (DB time over the time observed), the most active
-- sessions of a sample, its DB time, the wait class that took most of it,
-- its load per bucket (AAS, NULL where nothing was observed), where its
-- rollups end (as_of), its newest sample and how late it is, and its
-- state: 'ok'; 'late' (no sample for twice its pull interval, or two
-- minutes for a subscribed server); 'stopped' (its subscription's worker
-- is not running); 'error' (last_error says what); 'unreachable' (its
-- node did not answer: no figures); 'removed' (history kept).  Removed
-- servers only when they have rollups in the window.  The servers of a
-- node are read in one statement, all nodes at once; when one does not
-- answer, node by node, so that the others are still shown.
CREATE FUNCTION pgsentinel_fleet_overview(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 day',
    until timestamptz DEFAULT pg_catalog.now(),
    buckets integer DEFAULT 24)
RETURNS TABLE (
    server text,
    node name,
    state text,
    aas double precision,
    peak integer,
    db_time double precision,
    top_wait_class text,
    top_wait_class_pct double precision,
    load double precision[],
    bucket interval,
    as_of timestamptz,
    last_sample_time timestamptz,
    lag interval,
    last_error text,
    top_events jsonb,
    top_queries jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- (a plan over every server's partitions would compile for seconds)
SET jit = off
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    q text;
    step interval;
    hours boolean;
    ids integer[];
    grp record;
    sums jsonb;
    part jsonb;
    hlo timestamptz;
    hhi timestamptz;
    failed jsonb := '{}';
BEGIN
    IF since IS NULL OR until IS NULL OR until <= since THEN
        RAISE EXCEPTION 'the overview needs a window: since before until'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'E.g. pgsentinel_fleet_overview(now() - interval ''1 day'', now()).';
    END IF;
    IF buckets IS NULL OR buckets NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'buckets must be 1 to 1000, not %', buckets
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The load of each server is given in that many buckets (24 by default).';
    END IF;
    -- a bucket of whole minutes (the rollups' grain), read from the hour
    -- rollups when it is whole hours
    EXECUTE format('SELECT greatest(%I.pgsentinel_auto_bucket($1, $2, $3), interval ''1 minute'')', s)
        INTO step USING since, until, buckets;
    hours := extract(epoch FROM step)::numeric % 3600 = 0;
    SELECT @extschema@.pgsentinel_fleet_overview_sql() INTO q;
    q := format('SELECT coalesce(jsonb_agg(to_jsonb(x)), ''[]'')
                   FROM (' || q || ') x(server_id, kind, b, wclass, wevent, queryid, v, peak)', s);
    EXECUTE format('SELECT array_agg(f.server_id) FROM %I.pgsentinel_fleet_status f', s) INTO ids;
    -- the hours every server has rolled up: their minutes are not read
    IF hours THEN
        EXECUTE format('SELECT CASE WHEN date_trunc(''hour'', $1, ''UTC'') = $1 THEN $1
                                    ELSE date_trunc(''hour'', $1, ''UTC'') + interval ''1 hour'' END,
                               least(date_trunc(''hour'', $2, ''UTC''),
                                     min(coalesce(f.hours_rolled_until, ''-infinity'')))
                          FROM %I.pgsentinel_fleet_status f WHERE f.server_id = ANY ($3)', s)
            INTO hlo, hhi USING since, until, ids;
    END IF;
    IF hlo IS NULL OR hhi IS NULL OR hhi <= hlo THEN
        hlo := since;
        hhi := since;
    END IF;
    BEGIN
        EXECUTE q INTO sums USING ids, since, until, step, hours, hlo, hhi;
    EXCEPTION WHEN connection_exception THEN
        -- a node did not answer: node by node
        sums := '[]';
        FOR grp IN EXECUTE format('SELECT f.node, array_agg(f.server_id) AS ids
                                     FROM %I.pgsentinel_fleet_status f GROUP BY f.node', s) LOOP
            BEGIN
                EXECUTE q INTO part USING grp.ids, since, until, step, hours, hlo, hhi;
                sums := sums || part;
            EXCEPTION WHEN connection_exception THEN
                failed := failed || jsonb_build_object(coalesce(grp.node, ''), SQLERRM);
            END;
        END LOOP;
    END;
    RETURN QUERY EXECUTE format($q$
        WITH sm AS (
            SELECT * FROM jsonb_to_recordset($1)
                AS x(server_id int4, kind text, b timestamptz, wclass text, wevent text,
                     queryid int8, v float8, peak int4)
        ), per AS (
            SELECT sm.server_id, sum(sm.v) FILTER (WHERE sm.kind = 'w') AS db,
                   sum(sm.v) FILTER (WHERE sm.kind = 'o') AS obs, max(sm.peak) AS peak
              FROM sm GROUP BY 1
        ), g AS (
            SELECT g.bucket_start AS b FROM %1$I.pgsentinel_buckets($3, $4, $5, timestamptz '2000-01-01 00:00:00+00') g
        ), wb AS (
            -- each server's load per bucket, once (not a lookup per bucket)
            SELECT sm.server_id, sm.b, sum(sm.v) FILTER (WHERE sm.kind = 'w') AS db,
                   sum(sm.v) FILTER (WHERE sm.kind = 'o') AS obs
              FROM sm WHERE sm.kind IN ('w', 'o') GROUP BY 1, 2
        ), ld AS (
            SELECT f.server_id, array_agg(wb.db / NULLIF(wb.obs, 0) ORDER BY g.b) AS load
              FROM %1$I.pgsentinel_fleet_status f CROSS JOIN g
              LEFT JOIN wb ON wb.server_id = f.server_id AND wb.b = g.b
             GROUP BY 1
        ), tw AS (
            SELECT DISTINCT ON (x.server_id) x.server_id, x.wclass, x.v
              FROM (SELECT sm.server_id, sm.wclass, sum(sm.v) AS v FROM sm
                     WHERE sm.kind = 'w' GROUP BY 1, 2) x
             ORDER BY x.server_id, x.v DESC, x.wclass
        ), tops AS (
            SELECT x.server_id,
                   jsonb_agg(jsonb_build_object('wait_event_type', x.wclass, 'wait_event', x.wevent,
                                                'db_time', x.v) ORDER BY x.v DESC, x.wclass, x.wevent)
                       FILTER (WHERE x.kind = 'e') AS events,
                   jsonb_agg(jsonb_build_object('queryid', x.queryid, 'db_time', x.v)
                             ORDER BY x.v DESC, x.queryid)
                       FILTER (WHERE x.kind = 'q') AS queries
              FROM (SELECT sm.*, row_number() OVER (PARTITION BY sm.server_id, sm.kind
                                                    ORDER BY sm.v DESC, sm.wclass, sm.wevent, sm.queryid) AS n
                      FROM sm WHERE sm.kind IN ('e', 'q')) x
             WHERE x.n <= 5
             GROUP BY 1
        )
        SELECT f.name, f.node,
               CASE WHEN $2 ? f.node THEN 'unreachable'
                    WHEN f.removed IS NOT NULL THEN 'removed'
                    WHEN f.last_error IS NOT NULL THEN 'error'
                    WHEN f.method = 'logical' AND NOT coalesce(f.receiving, false) THEN 'stopped'
                    WHEN n.t IS NULL
                         OR n.t < now() - CASE WHEN f.method = 'pull'
                                               THEN greatest(2 * f.pull_interval, interval '1 minute')
                                               ELSE interval '2 minutes' END THEN 'late'
                    ELSE 'ok' END,
               per.db / NULLIF(per.obs, 0), per.peak, coalesce(per.db, 0),
               tw.wclass, 100 * tw.v / NULLIF(per.db, 0),
               ld.load, $5, f.rolled_until, n.t, now() - n.t,
               coalesce(f.last_error, $2 ->> f.node),
               tops.events, tops.queries
          FROM %1$I.pgsentinel_fleet_status f
          LEFT JOIN per ON per.server_id = f.server_id
          LEFT JOIN ld ON ld.server_id = f.server_id
          LEFT JOIN tw ON tw.server_id = f.server_id
          LEFT JOIN tops ON tops.server_id = f.server_id
          -- (the newest sample of a server whose node answered)
          LEFT JOIN LATERAL (
               SELECT %1$I.pgsentinel_fleet_newest_sample(f.server_id, 'infinity'::timestamptz) AS t
                WHERE NOT $2 ? coalesce(f.node, '')) n ON true
         WHERE f.removed IS NULL OR per.obs > 0
         ORDER BY per.db / NULLIF(per.obs, 0) DESC NULLS LAST, f.name$q$, s)
        USING sums, failed, since, until, step;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_overview(timestamptz, timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgsentinel_fleet_overview(timestamptz, timestamptz, integer) TO pg_read_all_stats;

-- The overview as one self-contained HTML page: a table of the servers,
-- the busiest first, each with its load drawn as a sparkline (its own
-- scale, its peak AAS in the tooltip), its state and how late its feed
-- is, and a link to its section below (its top wait events and query
-- ids).  Server names are letters, digits, "_", "." and "-" (the server
-- table's check) and go into ids and links as they are; every other name
-- and every error is escaped.
CREATE FUNCTION pgsentinel_fleet_overview_html(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 day',
    until timestamptz DEFAULT pg_catalog.now(),
    buckets integer DEFAULT 24)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $fn$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    r record;
    rows text := '';
    sections text := '';
    n integer := 0;
    spark text;
    top double precision;
    nb integer;
    ev text;
    qs text;
BEGIN
    FOR r IN EXECUTE format('SELECT * FROM %I.pgsentinel_fleet_overview($1, $2, $3)', s)
             USING since, until, buckets LOOP
        n := n + 1;
        -- the sparkline: one point per bucket with a figure, on its own scale
        nb := greatest(cardinality(r.load), 1);
        SELECT max(v) INTO top FROM unnest(r.load) v;
        spark := format('<svg class="spark" width="160" height="28" viewBox="0 0 160 28" role="img" aria-label="load of %s"><title>peak %s AAS per bucket of %s</title>',
                        replace(replace(replace(replace(r.server, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'),
                        coalesce(round(top::numeric, 2)::text, 'no data'), r.bucket)
                 || coalesce((SELECT '<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="'
                                     || string_agg(round((2 + 156.0 * (o - 1) / greatest(nb - 1, 1))::numeric, 1)
                                                   || ',' || round((26 - 24 * v / NULLIF(top, 0))::numeric, 1), ' ' ORDER BY o)
                                     || '"/>'
                                FROM unnest(r.load) WITH ORDINALITY AS u(v, o)
                               WHERE v IS NOT NULL AND top > 0), '')
                 || '</svg>';
        rows := rows || format('<tr class="%s"><td><a href="#s-%s">%s</a></td><td class="state">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class="err">%s</td></tr>',
                               r.state, r.server, r.server, r.state,
                               coalesce(round(r.aas::numeric, 2)::text, ''),
                               coalesce(r.peak::text, ''),
                               round(r.db_time::numeric)::text,
                               coalesce(replace(replace(r.top_wait_class, '&', '&amp;'), '<', '&lt;')
                                        || ' (' || round(r.top_wait_class_pct::numeric) || '%)', ''),
                               spark,
                               coalesce(to_char(r.as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), ''),
                               coalesce(justify_interval(date_trunc('second', r.lag))::text, ''),
                               coalesce(replace(replace(replace(r.last_error, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), ''));
        SELECT @extschema@.pgsentinel_html_table(r.top_events, (ARRAY['wait_event_type', 'wait_event', 'db_time']::text[]), (ARRAY['wait class', 'wait event', 'DB time (s)']::text[])) INTO ev;
        SELECT @extschema@.pgsentinel_html_table(r.top_queries, (ARRAY['queryid', 'db_time']::text[]), (ARRAY['query id', 'DB time (s)']::text[])) INTO qs;
        sections := sections || format('<h2 id="s-%s">%s</h2><p>%s%s; rollups to %s UTC.</p>',
                                       r.server, r.server, r.state,
                                       coalesce(', node ' || replace(replace(r.node, '&', '&amp;'), '<', '&lt;'), ''),
                                       coalesce(to_char(r.as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), 'none'))
                    || '<h3>Top wait events</h3>' || ev || '<h3>Top query ids</h3>' || qs;
    END LOOP;
    RETURN '<!DOCTYPE html><html><head><meta charset="utf-8"><title>pgsentinel fleet overview</title><style>'
        || 'body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}'
        || 'td.n{text-align:right}tr.late td.state,tr.stopped td.state{background:#fff3c4}'
        || 'tr.error td.state,tr.unreachable td.state{background:#f8c9c4}td.err{font-size:small;color:#a00}'
        || '</style></head><body><h1>pgsentinel fleet overview</h1>'
        || format('<p>%s to %s UTC, %s servers; figures from each server''s rollups, to its &quot;as of&quot;.</p>',
                  to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'),
                  to_char(until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), n)
        || '<table><tr><th>server</th><th>state</th><th>AAS</th><th>peak</th><th>DB time (s)</th><th>top wait class</th><th>load</th><th>as of (UTC)</th><th>lag</th><th>error</th></tr>'
        || rows || '</table>' || sections || '</body></html>';
END
$fn$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_overview_html(timestamptz, timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgsentinel_fleet_overview_html(timestamptz, timestamptz, integer) TO pg_read_all_stats;
