
-- Reports: the one-call report of a window, as text, JSON or a single
-- self-contained HTML file (docs/reports.md).  PL/pgSQL with a fixed
-- search_path; the extension's own functions are called in its schema,
-- @extschema@, bound when the script runs.

-- The report of a window: load profile, activity over time, top waits,
-- statements and sessions, blocking trees.  format: 'text' (for psql),
-- 'json' (every section as the functions return it) or 'html' (one file:
-- inline CSS and SVG, nothing fetched).  cpus: the CPU line of the chart,
-- pgsentinel_cpu_count() when NULL (none for a fleet server: the
-- repository's CPUs are not its own); top_n: rows per top section;
-- server: a fleet server of this repository (docs/fleet.md).  Without
-- JIT: the query of the sections plans every way of reading a window, most
-- of which never run, and their costs made JIT compile it for 28 s of a
-- 29 s report over a week's archive (bench/REPORT.md, section 7).
CREATE FUNCTION pgsentinel_report(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    format text DEFAULT 'text',
    cpus integer DEFAULT NULL,
    top_n integer DEFAULT 10,
    dbname text DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $fn$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    doc jsonb;
    secs double precision;
    step interval;
    out text := '';
    r record;
    sec record;
    j jsonb;
    j_text text;
    chart text;
    version text := current_setting('server_version');
    id integer;
    -- with sweeps, every statement that ran was read: its calls are whole
    sweeps boolean := coalesce((SELECT x.setting <> '0' FROM pg_settings x
                                 WHERE x.name = 'pgsentinel_pgssh.sweep_interval'), false);
BEGIN
    IF format IS NULL OR format NOT IN ('text', 'html', 'json') THEN
        RAISE EXCEPTION 'unknown report format "%"', format
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use format => ''text'', ''html'' or ''json''.';
    END IF;
    SELECT @extschema@.pgsentinel_window_seconds(since, until) INTO secs;
    PERFORM @extschema@.pgsentinel_check_request(since, until, top_n, cpus, dbname, NULL::pg_catalog.text, NULL::pg_catalog.text, server);
    IF server IS NOT NULL THEN
        -- checks the caller and the name before any section runs
        id := @extschema@.pgsentinel_fleet_server_id(server);
        EXECUTE pg_catalog.format('SELECT f.remote_version FROM %I.pgsentinel_fleet_status f
                                    WHERE f.server_id = $1', s)
            INTO version USING id;
    ELSIF cpus IS NULL THEN
        SELECT @extschema@.pgsentinel_cpu_count() INTO cpus;
    END IF;
    -- the chart's buckets: about 120, but of a minute at least in a window
    -- of more than half an hour, so that the minute rollups draw it (30-s
    -- buckets of an hour read its rows: 1.2 s of a 1.9-s report at 50
    -- sessions)
    step := NULL;
    SELECT @extschema@.pgsentinel_auto_bucket(since, until, 120) INTO step;
    IF step < interval '1 minute' AND until - since > interval '30 minutes' THEN
        step := interval '1 minute';
    END IF;

    -- Every section, as the report functions return it.
    EXECUTE pg_catalog.format($q$
        -- the chart's series and its tabs' (HTML), from one read of the load
        WITH ser AS MATERIALIZED (
            SELECT t.* FROM %1$I.pgsentinel_aas_series_of(
                       $1, $2, $7, CASE WHEN $10 <> 'text' THEN '{wait_class,statement,application,role}'
                                        ELSE '{wait_class}' END::pg_catalog.text[],
                       $5, server => $8) t)
        SELECT jsonb_build_object(
            'since', $1, 'until', $2, 'seconds', $4,
            'generated_at', clock_timestamp(),
            'database', current_database(), 'dbname_filter', $5,
            'server', $8, 'server_version', $9,
            'pgsentinel_version', (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'pgsentinel'),
            'cpus', $6,
            'bucket', $7::text,
            'load', (SELECT to_jsonb(l) FROM (
                SELECT a.db_time, a.aas, a.observed, a.coverage,
                       (SELECT coalesce(sum(o.samples), 0)::bigint
                          FROM %1$I.pgsentinel_observed($1, $2, 'hour'::pg_catalog.text, $8) o) AS samples,
                       CASE WHEN $5 IS NULL
                            THEN (SELECT max(o.peak) FROM %1$I.pgsentinel_observed($1, $2, 'hour'::pg_catalog.text, $8) o)
                            ELSE (SELECT max(c) FROM (SELECT count(*) AS c
                                                        FROM %1$I.pgsentinel_ash($1, $2, $5, server => $8)
                                                       WHERE weight > 0
                                                       GROUP BY ash_time, sample_id) x) END AS peak,
                       (SELECT count(DISTINCT pid)
                          FROM %1$I.pgsentinel_load($1, $2, 'hour'::pg_catalog.text, 'session'::pg_catalog.text, $5, server => $8)) AS sessions
                  FROM %1$I.pgsentinel_aas($1, $2, NULL::pg_catalog.text, $5, server => $8) a) l),
            'wait_classes', (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')
                               FROM %1$I.pgsentinel_aas($1, $2, 'wait_class'::pg_catalog.text, $5, server => $8) t),
            'top_events', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.rank), '[]')
                             FROM %1$I.pgsentinel_top($1, $2, 'wait_event'::pg_catalog.text, $3, $5, server => $8) t),
            'top_statements', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.rank), '[]')
                                 FROM %1$I.pgsentinel_top_statements($1, $2, $3, $5, server => $8) t),
            -- every statement's calls, sampled or not (of the whole
            -- server: not with a database filter)
            'top_calls', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.rank), '[]')
                            FROM %1$I.pgsentinel_top_calls($1, $2, $3, 'time'::pg_catalog.text, $8) t
                           WHERE $5 IS NULL),
            'top_sessions', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.rank), '[]')
                               FROM %1$I.pgsentinel_top($1, $2, 'session'::pg_catalog.text, $3, $5, server => $8) t),
            'top_session_groups', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.rank), '[]')
                                     FROM %1$I.pgsentinel_top($1, $2, 'session_group'::pg_catalog.text, $3, $5, server => $8) t),
            'top_applications', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.rank), '[]')
                                   FROM %1$I.pgsentinel_top($1, $2, 'application'::pg_catalog.text, $3, $5, server => $8) t),
            'top_databases', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.rank), '[]')
                                FROM %1$I.pgsentinel_top($1, $2, 'database'::pg_catalog.text, $3, $5, server => $8) t),
            'top_clients', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.rank), '[]')
                              FROM %1$I.pgsentinel_top($1, $2, 'client'::pg_catalog.text, $3, $5, server => $8) t),
            -- pgsentinel's own workers, left out of the load
            'own_workers', (SELECT jsonb_build_object('db_time', coalesce(sum(a.db_time), 0),
                                                      'aas', sum(a.aas))
                              FROM unnest('{pgsentinel archiver,pgsentinel statements}'::text[]) AS w(b),
                                   %1$I.pgsentinel_aas($1, $2, NULL::pg_catalog.text, $5,
                                                       backend => w.b, server => $8) a),
            'blocking_trees', (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')
                                 FROM %1$I.pgsentinel_blocking_trees($1, $2, $5, $8) t),
            -- of the whole server: not with a database filter
            'incidents', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.incident), '[]')
                            FROM %1$I.pgsentinel_incidents($1, $2, server => $8) t
                           WHERE $5 IS NULL),
            'unusual', (SELECT jsonb_build_object(
                                   'weeks_seen', coalesce(max(t.weeks_seen), 0),
                                   'keys_seen', count(*),
                                   'keys', coalesce(jsonb_agg(to_jsonb(t)) FILTER (WHERE t.unusual), '[]'))
                          FROM %1$I.pgsentinel_unusual($2, server => $8) t
                         WHERE $5 IS NULL),
            'series', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                 'bucket_start', t.bucket_start, 'wait_class', t.key,
                                 'aas', t.aas, 'coverage', t.coverage)
                               ORDER BY t.bucket_start, t.key), '[]')
                         FROM ser t WHERE t.by = 'wait_class'),
            -- the same series sliced by statement, application and role
            -- (the HTML charts' tabs: not read for the text report)
            'slices', (SELECT jsonb_object_agg(d.dim, (
                                 SELECT coalesce(jsonb_agg(jsonb_build_object(
                                            'bucket_start', t.bucket_start, 'key', t.key,
                                            'aas', t.aas, 'coverage', t.coverage)
                                          ORDER BY t.bucket_start, t.key), '[]')
                                   FROM ser t WHERE t.by = d.dim))
                         FROM unnest('{statement,application,role}'::text[]) AS d(dim)
                        WHERE $10 <> 'text'))
        $q$, s)
        INTO doc USING since, until, top_n, secs, dbname, cpus, step, server, version, format;
    -- what the sections above say, as findings with their cost and action
    j := @extschema@.pgsentinel_report_findings(doc);
    doc := doc || jsonb_build_object('findings', j);

    IF format = 'json' THEN
        RETURN jsonb_pretty(doc);
    ELSIF format = 'html' THEN
        out := @extschema@.pgsentinel_report_html(doc);
        RETURN out;
    END IF;

    -- Text: one section after the other, for psql (\pset format unaligned).
    out := pg_catalog.format(E'pgsentinel report: %s to %s (%s)\n',
                             to_char(since, 'YYYY-MM-DD HH24:MI:SS TZ'),
                             to_char(until, 'YYYY-MM-DD HH24:MI:SS TZ'),
                             (until - since)::text);
    -- the databases the load ran in, not only the one the report runs in
    SELECT string_agg(pg_catalog.format('%s %s%%', coalesce(regexp_replace(x.key, '[[:cntrl:]]', '?', 'g'), '(none)'),
                                        round(x.pct::numeric, 1)), ', ' ORDER BY x.rank)
      INTO j_text
      FROM jsonb_to_recordset(doc->'top_databases') AS x(rank int, key text, pct float8)
     WHERE x.rank <= 3;
    out := out || pg_catalog.format(E'%s, PostgreSQL %s, pgsentinel %s, generated %s\n\n',
                                    CASE WHEN server IS NULL
                                         THEN pg_catalog.format('load in %s (report run in database %s)',
                                                                coalesce('database ' || j_text, 'no database'),
                                                                doc->>'database')
                                         ELSE pg_catalog.format('server %s (repository database %s)',
                                                                server, doc->>'database') END,
                                    coalesce(doc->>'server_version', 'unknown'),
                                    coalesce(doc->>'pgsentinel_version', 'unknown'),
                                    to_char(clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS TZ'));
    -- first what to do, then when the load left its normal and what is
    -- unusual in the last hour
    out := out || E'== Findings (the causes of the most DB time, and what to do)\n';
    FOR r IN SELECT x.n, x.f FROM jsonb_array_elements_text(
                 jsonb_path_query_array(doc->'findings', '$[*].finding')) WITH ORDINALITY AS x(f, n) LOOP
        out := out || pg_catalog.format(E'  %s\n', CASE WHEN jsonb_array_length(doc->'findings') > 1
                                                        OR doc->'findings'->0->>'kind' <> 'none'
                                                       THEN r.n || '. ' ELSE '' END || r.f);
    END LOOP;
    out := out || E'\n';
    IF dbname IS NULL THEN
        out := out || E'== Incidents (when active sessions rose above normal)\n';
        IF jsonb_array_length(doc->'incidents') = 0 THEN
            out := out || E'  none: the active sessions stayed within their normal\n';
        END IF;
        FOR r IN SELECT * FROM jsonb_to_recordset(doc->'incidents')
                     AS x(incident int, started timestamptz, ended timestamptz, baseline float8,
                          aas float8, peak float8, top_wait text, top_wait_pct float8,
                          queryid bigint, query text, application text, root_blocker int,
                          blocker text) LOOP
            out := out || pg_catalog.format(E'  %s to %s (%s): %s active sessions, peak %s (normal %s); %s %s%%%s%s\n',
                                            to_char(r.started, 'HH24:MI:SS'), to_char(r.ended, 'HH24:MI:SS'),
                                            lpad(floor(extract(epoch FROM r.ended - r.started) / 3600)::text, 2, '0')
                                                || to_char(r.ended - r.started, ':MI:SS'),
                                            round(r.aas::numeric, 2), round(r.peak::numeric), round(r.baseline::numeric, 1),
                                            coalesce(r.top_wait, '(hidden)'), round(r.top_wait_pct::numeric),
                                            coalesce(', application ' || regexp_replace(regexp_replace(r.application, '\s+', ' ', 'g'), '[[:cntrl:]]', '?', 'g'), ''),
                                            coalesce(', root blocker pid ' || r.root_blocker, ''));
            out := out || pg_catalog.format(E'      SQL %s: %s\n', coalesce(r.queryid::text, '(none)'),
                                            coalesce(@extschema@.pgsentinel_text_line(r.query, 100), ''));
            IF btrim(r.blocker) <> '' THEN
                out := out || pg_catalog.format(E'      blocker: %s\n',
                                                @extschema@.pgsentinel_text_line(r.blocker, 160));
            END IF;
        END LOOP;
        out := out || pg_catalog.format(E'\n== Unusual now (the hour before %s against the same hour of the weeks before)\n',
                                        to_char(until, 'YYYY-MM-DD HH24:MI'));
        IF (doc->'unusual'->>'keys_seen')::int = 0 THEN
            out := out || E'  nothing to compare: no load in the hour\n';
        ELSIF (doc->'unusual'->>'weeks_seen')::int = 0 THEN
            out := out || E'  nothing to compare yet: the history has no earlier week of this hour (it is compared with the same hour of up to 4 weeks before)\n';
        ELSIF jsonb_array_length(doc->'unusual'->'keys') = 0 THEN
            out := out || pg_catalog.format(E'  nothing: every wait class and statement as usual (%s weeks)\n',
                                            doc->'unusual'->>'weeks_seen');
        END IF;
        FOR r IN SELECT * FROM jsonb_to_recordset(doc->'unusual'->'keys')
                     AS x(dimension text, key text, description text, aas float8, usual float8,
                          ratio float8, weeks_seen int) LOOP
            out := out || pg_catalog.format(E'  %-10s %-20s %8s AAS, usual %s (%s)%s\n',
                                            replace(r.dimension, '_', ' '), r.key, round(r.aas::numeric, 2),
                                            round(r.usual::numeric, 2),
                                            coalesce('x' || round(r.ratio::numeric, 1), 'new'),
                                            coalesce('  ' || @extschema@.pgsentinel_text_line(r.description, 80), ''));
        END LOOP;
        out := out || E'\n';
    END IF;

    j := doc->'load';
    out := out || E'== Load profile\n';
    out := out || pg_catalog.format(E'  DB time            %s s\n', round((j->>'db_time')::numeric, 1));
    out := out || pg_catalog.format(E'  average active     %s sessions\n',
                                    coalesce(round((j->>'aas')::numeric, 2)::text, 'no data'));
    out := out || pg_catalog.format(E'  peak               %s sessions in one sample\n',
                                    coalesce(j->>'peak', '0'));
    out := out || pg_catalog.format(E'  sessions seen      %s\n', j->>'sessions');
    out := out || pg_catalog.format(E'  coverage           %s%% of the window observed (%s samples)\n',
                                    round(100 * (j->>'coverage')::numeric, 1), j->>'samples');
    out := out || pg_catalog.format(E'  pgsentinel itself  %s s (%s AAS, its archiver and statements workers: not in the load above)\n',
                                    round((doc->'own_workers'->>'db_time')::numeric, 1),
                                    coalesce(round((doc->'own_workers'->>'aas')::numeric, 3)::text, '-'));
    out := out || pg_catalog.format(E'  CPUs               %s\n',
                                    coalesce(cpus::text, CASE WHEN server IS NULL
                                                              THEN 'unknown (set pgsentinel_report.cpus)'
                                                              ELSE 'unknown (give cpus => n)' END));
    IF (j->>'coverage')::numeric < 0.9 THEN
        out := out || E'  (the sampler did not observe the whole window: aas is over the time observed)\n';
    END IF;

    out := out || E'\n== Wait classes\n';
    FOR r IN SELECT * FROM jsonb_to_recordset(doc->'wait_classes')
                 AS x(key text, aas float8, pct float8, db_time float8) LOOP
        out := out || pg_catalog.format(E'  %-12s %8s AAS %6s%%\n', coalesce(r.key, '(hidden)'),
                                        round(r.aas::numeric, 2), round(r.pct::numeric, 1));
    END LOOP;

    out := out || E'\n== Activity over time\n';
    EXECUTE pg_catalog.format('SELECT string_agg(c, E''\n'') FROM %I.pgsentinel_chart($1, $2, cpus => $3, dbname => $4, server => $5) c', s)
        INTO chart USING since, until, cpus, dbname, server;
    out := out || coalesce(chart, '') || E'\n';

    out := out || E'\n== Top wait events\n';
    out := out || pg_catalog.format(E'  %-32s %8s %7s\n', 'wait event', 'AAS', '%DB');
    FOR r IN SELECT * FROM jsonb_to_recordset(doc->'top_events')
                 AS x(rank int, key text, aas float8, pct float8) LOOP
        out := out || pg_catalog.format(E'  %-32s %8s %6s%%\n', coalesce(r.key, '(hidden)'),
                                        round(r.aas::numeric, 2), round(r.pct::numeric, 1));
    END LOOP;

    out := out || E'\n== Top SQL\n';
    out := out || pg_catalog.format(E'  %-20s %8s %7s %9s %9s %9s  %s\n', 'queryid', 'AAS', '%DB',
                                    'calls/s', 'ms/call', 'rows/call', 'waits; statement');
    FOR r IN SELECT * FROM jsonb_to_recordset(doc->'top_statements')
                 AS x(rank int, queryid bigint, query text, aas float8, pct float8,
                      wait_profile text, calls_per_s float8, ms_per_call float8,
                      rows_per_call float8, counted float8) LOOP
        out := out || pg_catalog.format(E'  %-20s %8s %6s%% %9s %9s %9s  %s\n      %s\n',
                                        coalesce(r.queryid::text, '(none)'),
                                        round(r.aas::numeric, 2), round(r.pct::numeric, 1),
                                        coalesce(round(r.calls_per_s::numeric, 1)::text, '-'),
                                        coalesce(round(r.ms_per_call::numeric, 2)::text, '-'),
                                        coalesce(round(r.rows_per_call::numeric, 1)::text, '-'),
                                        r.wait_profile,
                                        coalesce(@extschema@.pgsentinel_text_line(r.query, 100), ''));
        IF r.counted < 0.9 AND NOT sweeps THEN
            out := out || pg_catalog.format(E'      (calls counted over %s%% of the window: it was read only while sampled)\n',
                                            round(100 * r.counted::numeric));
        END IF;
    END LOOP;

    IF jsonb_array_length(doc->'top_calls') > 0 THEN
        out := out || E'\n== Top SQL by execution time (every statement, from pg_stat_statements)\n';
        out := out || pg_catalog.format(E'  %-20s %9s %7s %9s %9s %9s  %s\n', 'queryid', 'exec s',
                                        '%exec', 'calls/s', 'ms/call', 'rows/call', 'statement');
        FOR r IN SELECT * FROM jsonb_to_recordset(doc->'top_calls')
                     AS x(rank int, queryid bigint, query text, calls_per_s float8,
                          ms_per_call float8, rows_per_call float8, exec_s float8,
                          pct float8) LOOP
            out := out || pg_catalog.format(E'  %-20s %9s %6s%% %9s %9s %9s  %s\n',
                                            coalesce(r.queryid::text, '(hidden)'),
                                            round(r.exec_s::numeric, 1),
                                            coalesce(round(r.pct::numeric, 1)::text, '-'),
                                            round(r.calls_per_s::numeric, 1),
                                            coalesce(round(r.ms_per_call::numeric, 2)::text, '-'),
                                            coalesce(round(r.rows_per_call::numeric, 1)::text, '-'),
                                            coalesce(@extschema@.pgsentinel_text_line(r.query, 60), ''));
        END LOOP;
    END IF;

    out := out || E'\n== Top sessions\n';
    FOR r IN SELECT * FROM jsonb_to_recordset(doc->'top_sessions')
                 AS x(rank int, key text, description text, aas float8, pct float8,
                      wait_profile text) LOOP
        out := out || pg_catalog.format(E'  pid %-8s %8s AAS %6s%%  %s; %s\n', r.key,
                                        round(r.aas::numeric, 2), round(r.pct::numeric, 1),
                                        regexp_replace(regexp_replace(r.description, '\s+', ' ', 'g'), '[[:cntrl:]]', '?', 'g'), r.wait_profile);
    END LOOP;

    FOR sec IN SELECT * FROM (VALUES (0, 'Top session groups (role@database application from client)',
                                      'top_session_groups', '(none)'),
                                     (1, 'Top applications', 'top_applications', '(none)'),
                                     (2, 'Top databases', 'top_databases', '(none)'),
                                     (3, 'Top clients', 'top_clients', '(local or hidden)'))
                           AS v(n, title, section, nothing) ORDER BY n LOOP
        out := out || E'\n== ' || sec.title || E'\n';
        FOR r IN SELECT * FROM jsonb_to_recordset(doc->sec.section)
                     AS x(rank int, key text, aas float8, pct float8, wait_profile text) LOOP
            out := out || pg_catalog.format(E'  %-30s %8s AAS %6s%%  %s\n',
                                            coalesce(regexp_replace(nullif(r.key, ''), '[[:cntrl:]]', '?', 'g'), sec.nothing),
                                            round(r.aas::numeric, 2), round(r.pct::numeric, 1), r.wait_profile);
        END LOOP;
    END LOOP;

    out := out || E'\n== Blocking trees\n';
    IF jsonb_array_length(doc->'blocking_trees') = 0 THEN
        out := out || E'  no session waited for another\n';
    END IF;
    FOR r IN SELECT * FROM jsonb_to_recordset(doc->'blocking_trees')
                 AS x(root_pid int, depth int, pid int, blocked_by int[], usename text,
                      state text, wait_event text, query text, samples bigint,
                      sessions bigint, levels int, db_time float8, aas float8,
                      application_name text, client_addr text, xact_start timestamptz,
                      first_seen timestamptz, last_seen timestamptz, lock text,
                      lock_mode text, blocker_lock_modes text) LOOP
        IF r.depth = 0 THEN
            out := out || pg_catalog.format(E'  root blocker pid %s (%s, application %s, client %s, %s%s): %s behind it from %s to %s (%s), %s s of DB time (%s AAS), %s\n      %s\n',
                                            r.pid, coalesce(regexp_replace(regexp_replace(r.usename, '\s+', ' ', 'g'), '[[:cntrl:]]', '?', 'g'), '?'),
                                            coalesce(regexp_replace(regexp_replace(nullif(r.application_name, ''), '\s+', ' ', 'g'), '[[:cntrl:]]', '?', 'g'), '-'),
                                            -- (a session one may not see has no state either)
                                            coalesce(r.client_addr, CASE WHEN r.state IS NULL THEN 'hidden' ELSE 'local' END),
                                            coalesce(r.state, 'state unknown'),
                                            coalesce(', in a transaction since ' || to_char(r.xact_start, 'YYYY-MM-DD HH24:MI:SS'), ''),
                                            r.sessions || CASE WHEN r.sessions = 1 THEN ' session' ELSE ' sessions' END,
                                            to_char(r.first_seen, 'HH24:MI:SS'), to_char(r.last_seen, 'HH24:MI:SS'),
                                            lpad(floor(extract(epoch FROM r.last_seen - r.first_seen) / 3600)::text, 2, '0')
                                                || to_char(r.last_seen - r.first_seen, ':MI:SS'),
                                            round(r.db_time::numeric, 1),
                                            round(r.aas::numeric, 2),
                                            r.levels || CASE WHEN r.levels = 1 THEN ' level' ELSE ' levels' END,
                                            coalesce(@extschema@.pgsentinel_text_line(r.query, 100),
                                                     '(its statement was not sampled)'));
        ELSE
            out := out || pg_catalog.format(E'  %s pid %s (%s) waited %s s on %s%s behind %s%s: %s\n',
                                            repeat('  ', r.depth), r.pid, coalesce(regexp_replace(regexp_replace(r.usename, '\s+', ' ', 'g'), '[[:cntrl:]]', '?', 'g'), '?'),
                                            round(r.db_time::numeric, 1), coalesce(r.wait_event, '?'),
                                            -- the lock: the mode wanted, what the blocker held
                                            coalesce(' for ' || r.lock_mode || ' on '
                                                     || regexp_replace(r.lock, '[[:cntrl:]]', '?', 'g'), ''),
                                            array_to_string(r.blocked_by, ','),
                                            coalesce(CASE WHEN r.blocker_lock_modes LIKE 'queued for %'
                                                          THEN ' (' || r.blocker_lock_modes || ' ahead of it)'
                                                          ELSE ' (holding ' || r.blocker_lock_modes || ')' END, ''),
                                            coalesce(@extschema@.pgsentinel_text_line(r.query, 60), ''));
        END IF;
    END LOOP;
    RETURN out;
END
$fn$;

-- The findings of a report (pgsentinel_report's JSON document): each cause
-- of DB time the report already measures (a lock queue behind one root, a
-- wait event, CPU demand beyond the CPUs, a statement), as one sentence
-- with its cost and what to do, as ADDM opens its report.  A finding must
-- cost at least 10% of the window's DB time and 0.05 average active
-- sessions (3 minutes of an hour): a nearly idle database has no cause
-- worth acting on.  At most 5, costliest first; a window without one gets
-- a single "none" saying why.  The advice per wait event is the table in
-- docs/reports.md ("Findings"): keep the two alike.
CREATE FUNCTION pgsentinel_report_findings(doc jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    db_time float8 := coalesce((doc->'load'->>'db_time')::float8, 0);
    observed float8 := coalesce((doc->'load'->>'observed')::float8, 0);
    cpus integer := (doc->>'cpus')::integer;
    min_cost float8;
    found jsonb;
BEGIN
    IF observed <= 0 THEN
        RETURN jsonb_build_array(jsonb_build_object(
            'kind', 'none', 'db_time', 0, 'pct', NULL,
            'finding', 'No finding: the sampler observed nothing of this window.'));
    ELSIF db_time <= 0 THEN
        RETURN jsonb_build_array(jsonb_build_object(
            'kind', 'none', 'db_time', 0, 'pct', NULL,
            'finding', pg_catalog.format('No finding: no session was active in the %s s observed.',
                                         round(observed::numeric))));
    END IF;

    min_cost := greatest(0.1 * db_time, 0.05 * observed);
    WITH roots AS (
        -- one lock queue per root blocker (the trees' depth 0 rows), with
        -- its statement cut at a word boundary, and the lock it held as its
        -- costliest waiter of the level below saw it: "AccessShareLock on
        -- public.t (wanted as AccessExclusiveLock)"
        SELECT x.*, c.cut,
               lk.held_modes || ' on ' || regexp_replace(lk.lock, '[[:cntrl:]]', '?', 'g')
                   || ' (wanted as ' || lk.lock_mode || ')' AS held,
               regexp_replace(regexp_replace(concat_ws(', ', coalesce(x.usename, 'role hidden'),
                                                       'application ' || nullif(x.application_name, ''),
                                                       'client ' || x.client_addr),
                                             '\s+', ' ', 'g'), '[[:cntrl:]]', '?', 'g') AS who
          FROM jsonb_to_recordset(doc->'blocking_trees')
               AS x(depth int, pid int, usename text, application_name text,
                    client_addr text, state text, wait_event text, query text,
                    sessions bigint, db_time float8, xact_start timestamptz,
                    first_seen timestamptz, last_seen timestamptz, episode int)
               CROSS JOIN LATERAL (SELECT @extschema@.pgsentinel_text_line(x.query, 60)) AS c(cut)
               LEFT JOIN LATERAL (
                   SELECT y.lock, y.lock_mode, y.blocker_lock_modes AS held_modes
                     FROM jsonb_to_recordset(doc->'blocking_trees')
                          AS y(root_pid int, episode int, depth int, db_time float8,
                               blocked_by int[], lock text, lock_mode text,
                               blocker_lock_modes text)
                    -- (a waiter's modes are its first blocker's: one whose
                    -- only blocker is the root)
                    WHERE y.root_pid = x.pid AND y.episode = x.episode AND y.depth = 1
                      AND y.blocked_by = ARRAY[x.pid]
                      AND y.lock IS NOT NULL AND y.blocker_lock_modes NOT LIKE 'queued for %'
                    ORDER BY y.db_time DESC LIMIT 1) lk ON true
         WHERE x.depth = 0
    ), statements AS (
        -- with the first wait of its profile ("IO:DataFileRead 62%, CPU
        -- 30%") and its share
        SELECT t.*, c.cut, w.wait AS top_wait,
               (substring(w.share FROM '^[0-9]+'))::float8 AS top_pct
          FROM jsonb_to_recordset(doc->'top_statements')
               AS t(queryid bigint, query text, db_time float8, wait_profile text,
                    calls_per_s float8, ms_per_call float8)
               CROSS JOIN LATERAL (SELECT @extschema@.pgsentinel_text_line(t.query, 60)) AS c(cut)
               CROSS JOIN LATERAL (SELECT split_part(split_part(t.wait_profile, ', ', 1), ' ', 1),
                                          split_part(split_part(t.wait_profile, ', ', 1), ' ', 2))
                                  AS w(wait, share)
    ), advice (event, class, what, todo) AS (
        -- what a wait event means and what to do, most specific first
        VALUES
        ('IO:DataFileRead', NULL, 'reads of tables and indexes from disk',
         'check the plans of the statements that wait on it for large scans (an index, fewer rows read), and whether shared_buffers and the OS cache hold what they read'),
        ('IO:DataFilePrefetch', NULL, 'reads of tables and indexes from disk',
         'check the plans of the statements that wait on it for large scans (an index, fewer rows read), and whether shared_buffers and the OS cache hold what they read'),
        ('IO:WALSync', NULL, 'the WAL to reach disk at commit',
         'put the WAL on a faster device or commit less often (larger transactions); synchronous_commit = off where losing the last commits in a crash is acceptable'),
        ('IO:WALWrite', NULL, 'the WAL to reach disk at commit',
         'put the WAL on a faster device or commit less often (larger transactions); synchronous_commit = off where losing the last commits in a crash is acceptable'),
        ('LWLock:WALWrite', NULL, 'the WAL to reach disk at commit',
         'put the WAL on a faster device or commit less often (larger transactions); synchronous_commit = off where losing the last commits in a crash is acceptable'),
        ('LWLock:WALInsert', NULL, 'their turn to insert into the WAL',
         'write less WAL: fewer full-page images (wal_compression, a longer checkpoint_timeout), batched writes'),
        ('IO:BufFileRead', NULL, 'temporary files of sorts and hashes that spilled',
         'raise work_mem for the statements that spill (log_temp_files names them)'),
        ('IO:BufFileWrite', NULL, 'temporary files of sorts and hashes that spilled',
         'raise work_mem for the statements that spill (log_temp_files names them)'),
        ('IO:DataFileExtend', NULL, 'tables and indexes to grow block by block',
         'load in larger batches (COPY), with fewer indexes during the load'),
        ('IO:DataFileWrite', NULL, 'dirty buffers they wrote out themselves',
         'let the background writer and checkpoints do it (bgwriter_lru_maxpages, checkpoint_completion_target) or raise shared_buffers'),
        ('LWLock:BufferMapping', NULL, 'pages to find in shared buffers',
         'read fewer pages (the plans of the top SQL) or raise shared_buffers above the working set'),
        ('LWLock:BufferContent', NULL, 'pages other sessions were changing',
         'spread the writes: fewer updates of the same rows, keys that do not all land on the last index page'),
        ('LWLock:LockManager', NULL, 'the lock manager, taking many locks at once',
         'touch fewer partitions and indexes per statement (partition pruning, prepared statements) and keep fewer sessions active at once (a pool)'),
        ('Client:ClientRead', NULL, 'their client to send (while active)',
         'look at the application (COPY FROM STDIN, steps of the extended protocol) and the network between it and the server'),
        ('Client:ClientWrite', NULL, 'their client to read results',
         'fetch fewer rows at a time, and look at the client and its network'),
        ('IPC:SyncRep', NULL, 'synchronous standbys to confirm commits',
         'check the standbys and the network to them (synchronous_standby_names, synchronous_commit)'),
        ('IPC:BufferIO', NULL, 'another session reading or writing the same page',
         'look at the statements that read the same tables from disk at once (large scans in several sessions: an index, fewer rows read) and whether shared_buffers holds what they read'),
        ('IO:BufferIO', NULL, 'another session reading or writing the same page',
         'look at the statements that read the same tables from disk at once (large scans in several sessions: an index, fewer rows read) and whether shared_buffers holds what they read'),
        ('Timeout:PgSleep', NULL, 'pg_sleep() called by the application',
         'look at the application that calls it'),
        (NULL, 'Timeout', 'a delay the session asked for (pg_sleep(), vacuum_cost_delay, a recovery or commit delay)',
         'look at what asks for the delay: the application, or the setting that makes it'),
        (NULL, 'Client', 'their client',
         'look at the application and the network between it and the server'),
        (NULL, 'Lock', 'locks held by other sessions',
         'see the blocking trees: end what holds the locks, and give DDL a lock_timeout'),
        (NULL, 'BufferPin', 'a buffer pinned by another session''s open cursor or scan',
         'find the long-open cursor or query (VACUUM waits for it too)'),
        (NULL, 'LWLock', 'a lock inside the server',
         'look at the statements that wait on it and at how many sessions are active at once'),
        (NULL, 'IO', 'the storage',
         'check the storage''s latency and the plans of the statements that wait on it'),
        (NULL, 'IPC', 'another process (parallel workers, replication, checkpoints)',
         'look at the statements that wait on it'),
        (NULL, 'Extension', 'an extension',
         'look at the extension the statements that wait on it call')
    ), lock_found AS (
        SELECT r.*, r.db_time AS cost FROM roots r WHERE r.db_time >= min_cost
    ), candidates AS (
        -- 1, 2: a lock queue behind one root, idle in transaction or not
        SELECT CASE WHEN r.state LIKE 'idle in transaction%' THEN 'blocker_idle_in_transaction'
                    WHEN r.state = 'active' THEN 'blocker_active'
                    ELSE 'blocker' END AS kind,
               1 AS ord, r.cost,
               pg_catalog.format('session %s (%s) %s, and %s %s waited for it from %s to %s',
                   r.pid, r.who,
                   CASE WHEN r.state LIKE 'idle in transaction%'
                        THEN 'sat idle in transaction'
                             || CASE WHEN r.xact_start IS NOT NULL
                                     THEN pg_catalog.format(' (its transaction open for %s s by then)',
                                                            round(extract(epoch FROM r.last_seen - r.xact_start)))
                                     ELSE '' END
                             || ' holding ' || coalesce(r.held, 'a lock')
                        WHEN r.state = 'active'
                        THEN 'held ' || coalesce(r.held, 'a lock') || ' while it ran '
                             || coalesce(r.cut, 'a statement that was not sampled')
                             || coalesce(' (itself on ' || r.wait_event || ')', '')
                        ELSE 'held ' || coalesce(r.held, 'a lock') || coalesce(' in state ' || r.state, ' (its state hidden from you)')
                   END,
                   r.sessions, CASE WHEN r.sessions = 1 THEN 'session' ELSE 'sessions' END,
                   to_char(r.first_seen, 'HH24:MI:SS'), to_char(r.last_seen, 'HH24:MI:SS')) AS fact,
               CASE WHEN r.state LIKE 'idle in transaction%'
                    THEN pg_catalog.format('end that transaction (pg_terminate_backend(%s) if its application will not), make the application commit or roll back before it waits, and set idle_in_transaction_session_timeout; give DDL a lock_timeout so that it never queues others behind it',
                                           r.pid)
                    WHEN r.state = 'active'
                    THEN 'look at what that statement did while it held the lock (its plan, its waits); run DDL with a lock_timeout and retry it, and long statements that lock rows off peak'
                    ELSE 'see the blocking trees for who it was; give DDL a lock_timeout'
               END AS todo
          FROM lock_found r
        UNION ALL
        -- 3: a wait event (CPU is 4; a lock queue found above explains its Lock waits)
        SELECT 'wait_event', 3, e.db_time,
               pg_catalog.format('sessions waited on %s%s', e.key, coalesce(' for ' || a.what, '')),
               coalesce(a.todo, 'look at the statements that wait on it (the waits of Top SQL)')
          FROM jsonb_to_recordset(doc->'top_events') AS e(key text, db_time float8)
          LEFT JOIN LATERAL (
               SELECT v.what, v.todo FROM advice v
                WHERE v.event = e.key OR v.class = split_part(e.key, ':', 1)
                ORDER BY v.event IS NULL LIMIT 1) a ON true
         WHERE e.key IS NOT NULL AND e.key <> 'CPU'
           AND NOT (e.key LIKE 'Lock:%' AND EXISTS (SELECT FROM lock_found))
        UNION ALL
        -- 4: more sessions on CPU than CPUs: the excess waited for a CPU
        SELECT 'cpu', 2, (c.aas - cpus) * observed,
               pg_catalog.format('sessions were on CPU %s at a time on average for %s %s, so part of that time they queued for a CPU',
                                 round(c.aas::numeric, 2), cpus, CASE WHEN cpus = 1 THEN 'CPU' ELSE 'CPUs' END),
               'make the top SQL use less CPU (plans, how often it runs), keep fewer sessions active at once (a pool sized near the CPUs), or add CPUs'
          FROM jsonb_to_recordset(doc->'wait_classes') AS c(key text, aas float8)
         WHERE c.key = 'CPU' AND cpus IS NOT NULL AND c.aas > cpus
        UNION ALL
        -- 5: a statement (not one that waited for locks: its blocker is the
        -- cause); one that spent most of its time sleeping or waiting for its
        -- client gets that wait's advice (no plan changes it), the others
        -- their plan's
        SELECT 'statement', 4, t.db_time,
               pg_catalog.format('statement %s (%s) spent its time on %s',
                                 t.queryid, coalesce(t.cut, 'its text not kept'),
                                 coalesce(nullif(t.wait_profile, ''), 'hidden')),
               coalesce(a.todo, 'look at its plan (EXPLAIN (ANALYZE, BUFFERS)) and at how often it runs')
                   || CASE WHEN t.calls_per_s IS NOT NULL AND t.ms_per_call IS NOT NULL
                           THEN pg_catalog.format(' (%s calls/s, %s ms a call)',
                                                  round(t.calls_per_s::numeric, 1), round(t.ms_per_call::numeric, 2))
                           ELSE '' END
          FROM statements t
          LEFT JOIN LATERAL (
               SELECT v.todo FROM advice v
                WHERE split_part(t.top_wait, ':', 1) IN ('Timeout', 'Client') AND t.top_pct >= 50
                  AND (v.event = t.top_wait OR v.class = split_part(t.top_wait, ':', 1))
                ORDER BY v.event IS NULL LIMIT 1) a ON true
         WHERE t.queryid IS NOT NULL AND t.wait_profile NOT LIKE 'Lock:%'
    )
    SELECT jsonb_agg(jsonb_build_object(
               'kind', f.kind, 'db_time', f.cost, 'pct', 100 * f.cost / db_time,
               'finding', pg_catalog.format('%s%s (%s s of DB time, %s%%): %s.',
                                            upper(left(f.fact, 1)), substr(f.fact, 2), round(f.cost::numeric), round((100 * f.cost / db_time)::numeric),
                                            f.todo))
             ORDER BY f.cost DESC, f.ord, f.fact)
      INTO found
      FROM (SELECT c.* FROM candidates c
             WHERE c.cost >= min_cost
             ORDER BY c.cost DESC, c.ord, c.fact LIMIT 5) f;
    RETURN coalesce(found, jsonb_build_array(jsonb_build_object(
        'kind', 'none', 'db_time', 0, 'pct', NULL,
        'finding', pg_catalog.format('No finding: no blocker, wait, statement or CPU shortage took 10%% of the %s s of DB time and 0.05 active sessions (%s on average).',
                                     round(db_time::numeric), round((db_time / observed)::numeric, 2)))));
END
$fn$;

-- An HTML table of a JSON array of objects: the values of keys, under
-- headers, escaped; fractions rounded to two decimals; times (JSON's ISO
-- form) as "Dec 06 18:18:08" in the reader's time zone, whole in the
-- cell's title; arrays as lists; the key "tree" in a cell that keeps its
-- spaces (class tree), its "`-- " drawn as a line (an entity: the scripts
-- are ASCII).  The page's style lets long texts wrap: the table fits.
CREATE FUNCTION pgsentinel_html_table(rows jsonb, keys text[], headers text[])
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    out text;
    e jsonb;
BEGIN
    IF rows IS NULL OR jsonb_array_length(rows) = 0 THEN
        RETURN '<p class="none">none</p>';
    END IF;
    out := '<table><tr>' || (SELECT string_agg('<th>' || replace(replace(h, '&', '&amp;'), '<', '&lt;') || '</th>', '' ORDER BY o)
                               FROM unnest(headers) WITH ORDINALITY AS x(h, o)) || '</tr>';
    FOR e IN SELECT * FROM jsonb_array_elements(rows) LOOP
        out := out || '<tr>' ||
            (SELECT string_agg(CASE WHEN jsonb_typeof(e->k) = 'number'
                                    THEN '<td class="n">' || CASE WHEN (e->>k)::numeric = trunc((e->>k)::numeric)
                                                                  THEN e->>k
                                                                  ELSE round((e->>k)::numeric, 2)::text END || '</td>'
                                    WHEN jsonb_typeof(e->k) = 'array'
                                    THEN '<td>' || replace(replace(replace(coalesce(
                                             (SELECT string_agg(a, ', ') FROM jsonb_array_elements_text(e->k) AS a), ''),
                                             '&', '&amp;'), '<', '&lt;'), '>', '&gt;') || '</td>'
                                    WHEN e->>k ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d'
                                    THEN '<td class="t" title="' || (e->>k)::timestamptz::text || '">'
                                         || to_char((e->>k)::timestamptz, 'Mon DD HH24:MI:SS') || '</td>'
                                    WHEN k = 'tree'
                                    THEN '<td class="tree">' || replace(replace(replace(replace(e->>k, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'),
                                                                        '`-- ', '&#9492;&#9472;&#9472; ') || '</td>'
                                    ELSE '<td' || CASE WHEN k IN ('query', 'blocker', 'description', 'who')
                                                       THEN ' class="q"' ELSE '' END || '>'
                                         || coalesce(replace(replace(replace(e->>k, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '') || '</td>'
                               END, '' ORDER BY o)
               FROM unnest(keys) WITH ORDINALITY AS x(k, o)) || '</tr>';
    END LOOP;
    RETURN out || '</table>';
END
$$;

-- The rows of pgsentinel_blocking_trees() (as JSON) in the order to draw
-- them as trees (one a root and episode), each with a key "tree": its
-- pid, indented under the session it waited for at the level above (the
-- lowest pid of them),
-- depth first, siblings in their order (by their time); a session whose
-- blocker is not one level up (trees merged over samples) comes last.
CREATE FUNCTION pgsentinel_html_trees(rows jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
WITH RECURSIVE x AS (
    SELECT j.e, j.o, (j.e->>'root_pid') || '/' || coalesce(j.e->>'episode', '') AS root,
           (j.e->>'pid')::integer AS pid,
           (j.e->>'depth')::integer AS depth,
           ARRAY(SELECT b::integer FROM jsonb_array_elements_text(
                     CASE WHEN jsonb_typeof(j.e->'blocked_by') = 'array'
                          THEN j.e->'blocked_by' ELSE '[]' END) AS b) AS by
      FROM jsonb_array_elements(rows) WITH ORDINALITY AS j(e, o)
), p AS (
    SELECT x.*, (SELECT min(y.pid) FROM x y
                  WHERE y.root = x.root AND y.depth = x.depth - 1 AND y.pid = ANY (x.by)) AS parent
      FROM x
), t AS (
    SELECT p.e, p.o, p.root, p.pid, p.depth, ARRAY[p.o] AS path
      FROM p WHERE p.depth = 0
    UNION ALL
    SELECT c.e, c.o, c.root, c.pid, c.depth, t.path || c.o
      FROM t JOIN p c ON c.root = t.root AND c.parent = t.pid AND c.depth = t.depth + 1
), drawn AS (
    SELECT t.e, t.depth, t.path FROM t
    UNION ALL
    SELECT p.e, p.depth, ARRAY[1000000000 + p.o] FROM p
     WHERE NOT EXISTS (SELECT FROM t WHERE t.o = p.o)
)
SELECT coalesce(jsonb_agg(d.e || jsonb_build_object('tree',
           repeat('    ', greatest(d.depth - 1, 0))
           || CASE WHEN d.depth > 0 THEN '`-- ' ELSE '' END || (d.e->>'pid')) ORDER BY d.path), '[]')
  FROM drawn d;
$$;

-- One stacked-area chart of the DB load, as SVG: ser is a JSON array of
-- objects (b: bucket start, cls: what the area is of, ord: its place in
-- the stack, colour, aas, cov: the bucket's coverage), seconds the
-- window's length, cpus where the CPU line goes (NULL: none), bucket the
-- bucket's length as text, label the chart's accessible name.  Axes at
-- round values and times, a tooltip per bucket, a legend; every name is
-- escaped (an application name is the client's to choose).
CREATE FUNCTION pgsentinel_html_stack(series jsonb, seconds double precision,
                                      cpus integer, bucket text, label text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    ser jsonb;
    w constant integer := 960;
    h constant integer := 320;
    lft constant integer := 50;
    rgt constant integer := 150;
    tp constant integer := 20;
    bot constant integer := 40;
    pw integer := w - lft - rgt;
    ph integer := h - tp - bot;
    nb integer;
    ymax double precision;
    ystep numeric;
    tstep double precision;
    svg text;
    r record;
    i integer;
    fmt text := CASE WHEN seconds > 86400 THEN 'MM-DD HH24:MI'
                     WHEN seconds > 3600 THEN 'HH24:MI'
                     ELSE 'HH24:MI:SS' END;
BEGIN
    SELECT coalesce(jsonb_agg(to_jsonb(y)), '[]') INTO ser
      FROM (SELECT (dense_rank() OVER (ORDER BY sc.b) - 1)::integer AS i, sc.b,
                   replace(replace(replace(replace(sc.cls, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;') AS cls,
                   sc.ord, sc.colour, sc.aas, sum(sc.aas) OVER w - sc.aas AS lo, sum(sc.aas) OVER w AS hi, sc.cov
              FROM jsonb_to_recordset(series) AS sc(b timestamptz, cls text, ord integer, colour text, aas float8, cov float8)
            WINDOW w AS (PARTITION BY sc.b ORDER BY sc.ord ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) y;

    SELECT count(DISTINCT t.b) INTO nb FROM jsonb_to_recordset(ser) AS t(i integer, b timestamptz, cls text, ord integer, colour text, aas float8, lo float8, hi float8, cov float8);
    SELECT greatest(max(t.hi), cpus, 0.5) * 1.15 INTO ymax FROM jsonb_to_recordset(ser) AS t(i integer, b timestamptz, cls text, ord integer, colour text, aas float8, lo float8, hi float8, cov float8);
    ymax := coalesce(ymax, 1);
    -- round ticks: the smallest step of 1, 2 or 5 times a power of ten
    -- that cuts the axis into at most four
    SELECT min(m * 10::numeric ^ e) INTO ystep
      FROM unnest(ARRAY[1, 2, 5]::numeric[]) m, generate_series(-2, 6) e
     WHERE m * 10::numeric ^ e >= ymax / 4;
    ymax := ystep * ceil(ymax / ystep);
    -- round times: the shortest usual step giving at most six labels
    SELECT min(x) INTO tstep
      FROM unnest(ARRAY[1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
                        10800, 21600, 43200, 86400, 172800, 604800]::float8[]) x
     WHERE x * 6 >= seconds;
    tstep := coalesce(tstep, 604800);

    svg := pg_catalog.format('<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" role="img" aria-label="%s">',
                             w, h, w, h,
                             replace(replace(replace(replace(label, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'));
    svg := svg || pg_catalog.format('<rect x="%s" y="%s" width="%s" height="%s" fill="#ffffff" stroke="#999"/>', lft, tp, pw, ph);
    -- horizontal grid and the y axis
    FOR i IN 0..round(ymax / ystep)::integer LOOP
        svg := svg || pg_catalog.format('<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="#e0e0e0"/><text x="%s" y="%s" class="ax" text-anchor="end">%s</text>',
                                        lft, lft + pw, round((tp + ph - ph * i * ystep / ymax)::numeric, 1),
                                        round((tp + ph - ph * i * ystep / ymax)::numeric, 1),
                                        lft - 4, round((tp + ph - ph * i * ystep / ymax + 4)::numeric, 1),
                                        trim_scale(i * ystep));
    END LOOP;
    -- buckets the sampler did not see
    FOR r IN SELECT DISTINCT t.i FROM jsonb_to_recordset(ser) AS t(i integer, b timestamptz, cls text, ord integer, colour text, aas float8, lo float8, hi float8, cov float8) WHERE t.cov = 0 ORDER BY t.i LOOP
        svg := svg || pg_catalog.format('<rect class="nodata" x="%s" y="%s" width="%s" height="%s" fill="#eeeeee"/>',
                                        round(lft + pw * (r.i - 0.5) / greatest(nb - 1, 1), 1), tp,
                                        round(pw::numeric / greatest(nb - 1, 1), 1), ph);
    END LOOP;
    -- one stacked area per wait class, in the order of pgsentinel_wait_classes()
    FOR r IN
        SELECT t.cls, t.colour, sum(t.aas) AS total,
               string_agg(pg_catalog.format('%s,%s', round(lft + pw * t.i::numeric / greatest(nb - 1, 1), 1),
                                            round((tp + ph - ph * t.hi / ymax)::numeric, 1)), ' L ' ORDER BY t.i) AS top,
               string_agg(pg_catalog.format('%s,%s', round(lft + pw * t.i::numeric / greatest(nb - 1, 1), 1),
                                            round((tp + ph - ph * t.lo / ymax)::numeric, 1)), ' L ' ORDER BY t.i DESC) AS bottom
          FROM jsonb_to_recordset(ser) AS t(i integer, b timestamptz, cls text, ord integer, colour text, aas float8, lo float8, hi float8, cov float8)
         GROUP BY t.cls, t.ord, t.colour
        HAVING sum(t.aas) > 0
         ORDER BY t.ord
    LOOP
        svg := svg || pg_catalog.format('<path class="series" data-class="%s" d="M %s L %s Z" fill="%s" stroke="%s"><title>%s</title></path>',
                                        r.cls, r.top, r.bottom, r.colour, r.colour, r.cls);
    END LOOP;
    -- the CPU line
    IF cpus IS NOT NULL THEN
        svg := svg || pg_catalog.format('<line class="cpus" x1="%s" x2="%s" y1="%s" y2="%s" stroke="#000" stroke-width="2" stroke-dasharray="8 4"/><text x="%s" y="%s" class="ax">%s CPUs</text>',
                                        lft, lft + pw, round((tp + ph - ph * cpus / ymax)::numeric, 1),
                                        round((tp + ph - ph * cpus / ymax)::numeric, 1),
                                        lft + pw + 4, round((tp + ph - ph * cpus / ymax + 4)::numeric, 1), cpus);
    END IF;
    -- a tooltip per bucket: its time, its total and its classes
    FOR r IN SELECT t.i, t.b, sum(t.aas) AS total, max(t.cov) AS cov,
                    string_agg(pg_catalog.format('%s %s', t.cls, round(t.aas::numeric, 2)), ', ' ORDER BY t.ord)
                        FILTER (WHERE t.aas > 0) AS parts
               FROM jsonb_to_recordset(ser) AS t(i integer, b timestamptz, cls text, ord integer, colour text, aas float8, lo float8, hi float8, cov float8)
              GROUP BY t.i, t.b ORDER BY t.i LOOP
        svg := svg || pg_catalog.format('<rect class="tip" x="%s" y="%s" width="%s" height="%s" fill="#000" fill-opacity="0"><title>%s: %s</title></rect>',
                                        round(greatest(lft + pw * (r.i - 0.5) / greatest(nb - 1, 1), lft)::numeric, 1), tp,
                                        round((pw::numeric / greatest(nb - 1, 1)), 1), ph,
                                        to_char(r.b, fmt),
                                        CASE WHEN r.cov = 0 THEN 'not observed'
                                             ELSE round(r.total::numeric, 2) || ' active sessions'
                                                  || coalesce(' (' || r.parts || ')', '') END);
    END LOOP;
    -- time labels at round times (buckets starting on a multiple of tstep)
    FOR r IN SELECT DISTINCT t.i, t.b FROM jsonb_to_recordset(ser) AS t(i integer, b timestamptz, cls text, ord integer, colour text, aas float8, lo float8, hi float8, cov float8)
              WHERE extract(epoch FROM t.b)::numeric % tstep::numeric = 0 ORDER BY t.i LOOP
        svg := svg || pg_catalog.format('<text x="%s" y="%s" class="ax" text-anchor="middle">%s</text>',
                                        round(lft + pw * r.i::numeric / greatest(nb - 1, 1), 1), tp + ph + 16,
                                        to_char(r.b, fmt));
    END LOOP;
    -- legend
    i := 0;
    FOR r IN SELECT t.cls, t.colour FROM jsonb_to_recordset(ser) AS t(i integer, b timestamptz, cls text, ord integer, colour text, aas float8, lo float8, hi float8, cov float8)
              GROUP BY t.cls, t.ord, t.colour HAVING sum(t.aas) > 0 ORDER BY t.ord DESC LOOP
        svg := svg || pg_catalog.format('<rect x="%s" y="%s" width="12" height="12" fill="%s"/><text x="%s" y="%s" class="ax">%s</text>',
                                        lft + pw + 50, tp + 40 + 18 * i, r.colour, lft + pw + 66, tp + 50 + 18 * i, r.cls);
        i := i + 1;
    END LOOP;
    svg := svg || pg_catalog.format('<text x="%s" y="%s" class="ax" text-anchor="middle">average active sessions per %s</text></svg>',
                                    lft + pw / 2, h - 6,
                                    replace(replace(replace(bucket, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'));
    RETURN svg;
END
$fn$;

-- The HTML page of a report (pgsentinel_report's JSON document): inline
-- CSS, and the DB load as an SVG stacked area per wait class with a line
-- at the CPU count, and sliced by SQL, application and role behind tabs
-- made of radio buttons and CSS (no script), so that the file shows the
-- same anywhere, offline.
CREATE FUNCTION pgsentinel_report_html(doc jsonb)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    classes jsonb;
    ser jsonb;
    tbl text;
    cpus integer := (doc->>'cpus')::integer;
    svg text;
    html text;
    r record;
    l jsonb := doc->'load';
    slices text;
    panels text := '';
    trees jsonb;
BEGIN
    EXECUTE pg_catalog.format('SELECT jsonb_agg(to_jsonb(c)) FROM %I.pgsentinel_wait_classes() c', s)
        INTO classes;


    -- the DB load by wait class, in the classes' order and colours
    WITH x AS (
        SELECT (e->>'bucket_start')::timestamptz AS b, e->>'wait_class' AS key,
               (e->>'aas')::float8 AS aas, (e->>'coverage')::float8 AS cov
          FROM jsonb_array_elements(doc->'series') e
    ), c AS (
        SELECT * FROM jsonb_to_recordset(classes) AS c(wait_class text, ord integer, colour text)
    )
    SELECT coalesce(jsonb_agg(to_jsonb(y)), '[]') INTO ser
      FROM (SELECT x.b, coalesce(c.wait_class, 'Other') AS cls, coalesce(c.ord, 11) AS ord,
                   coalesce(c.colour, '#7f7f7f') AS colour, sum(x.aas) AS aas, max(x.cov) AS cov
              FROM x LEFT JOIN c ON c.wait_class = x.key
             GROUP BY 1, 2, 3, 4) y;
    SELECT @extschema@.pgsentinel_html_stack(ser, ((doc->>'seconds')::float8), cpus, (doc->>'bucket'), ('DB load by wait class')) INTO svg;

    SELECT @extschema@.pgsentinel_html_trees((doc->'blocking_trees')) INTO trees;
    -- (a session's role, application and client in one cell, its wait and
    -- the lock it wanted in another, and the time a tree was seen as one
    -- span: the table fits the page)
    SELECT coalesce(jsonb_agg(t.e || jsonb_build_object(
               'who', concat_ws(', ', t.e->>'usename', nullif(t.e->>'application_name', ''),
                                t.e->>'client_addr'),
               'wait', concat_ws(' ', t.e->>'wait_event',
                                 'for ' || (t.e->>'lock_mode') || ' on ' || (t.e->>'lock'),
                                 CASE WHEN t.e->>'blocker_lock_modes' LIKE 'queued for %'
                                      THEN '(' || (t.e->>'blocker_lock_modes') || ' ahead of it)'
                                      ELSE '(blocker holds ' || (t.e->>'blocker_lock_modes') || ')' END),
               'seen', to_char((t.e->>'first_seen')::timestamptz, 'Mon DD HH24:MI:SS') || ' to '
                       || to_char((t.e->>'last_seen')::timestamptz,
                                  CASE WHEN date_trunc('day', (t.e->>'first_seen')::timestamptz)
                                            = date_trunc('day', (t.e->>'last_seen')::timestamptz)
                                       THEN 'HH24:MI:SS' ELSE 'Mon DD HH24:MI:SS' END))
               ORDER BY t.o), '[]')
      INTO trees
      FROM jsonb_array_elements(trees) WITH ORDINALITY AS t(e, o);
    -- and sliced by statement, application and role as Performance Insights
    -- slices it: the six largest keys of each, the rest as one
    slices := '';
    FOR r IN SELECT * FROM (VALUES (1, 'statement', 'SQL'), (2, 'application', 'application'),
                                   (3, 'role', 'role')) AS v(n, dim, title) ORDER BY n LOOP
        WITH x AS (
            SELECT (e->>'bucket_start')::timestamptz AS b, e->>'key' AS key,
                   (e->>'aas')::float8 AS aas, (e->>'coverage')::float8 AS cov
              FROM jsonb_array_elements(doc->'slices'->r.dim) e
        ), k AS (
            SELECT x.key, row_number() OVER (ORDER BY sum(x.aas) DESC, x.key) AS n
              FROM x WHERE x.key IS NOT NULL GROUP BY x.key HAVING sum(x.aas) > 0
        ), named AS (
            -- a statement's legend: its query id and the start of its text
            SELECT k.key, k.n,
                   CASE WHEN r.dim = 'statement'
                        THEN k.key || coalesce(' ' || left(regexp_replace((SELECT t->>'query'
                                 FROM jsonb_array_elements(doc->'top_statements') t
                                WHERE t->>'queryid' = k.key), '\s+', ' ', 'g'), 18), '')
                        ELSE k.key END AS label
              FROM k
        )
        SELECT coalesce(jsonb_agg(to_jsonb(y)), '[]') INTO ser
          FROM (SELECT x.b, CASE WHEN nm.n <= 6 THEN nm.label ELSE 'Other' END AS cls,
                       CASE WHEN nm.n <= 6 THEN nm.n::integer ELSE 7 END AS ord,
                       CASE WHEN nm.n <= 6
                            THEN (ARRAY['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'])[nm.n]
                            ELSE '#7f7f7f' END AS colour,
                       sum(x.aas) AS aas, max(x.cov) AS cov
                  FROM x LEFT JOIN named nm ON nm.key = x.key
                 GROUP BY 1, 2, 3, 4) y;
        SELECT @extschema@.pgsentinel_html_stack(ser, ((doc->>'seconds')::float8), cpus, (doc->>'bucket'), ('DB load by ' || r.title)) INTO tbl;
        slices := slices || pg_catalog.format('<input type="radio" name="slice" id="slice-%s"><label for="slice-%s">by %s</label>',
                                              r.dim, r.dim, r.title);
        panels := panels || pg_catalog.format('<div class="panel" id="panel-%s">%s</div>', r.dim, tbl);
    END LOOP;


    html := '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>pgsentinel report</title><style>'
        || 'body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1100px}'
        || 'h1{font-size:22px}h2{font-size:17px;border-bottom:1px solid #ccc;padding-bottom:2px;margin-top:28px}'
        -- (tables fit the page: a long statement or name wraps, anywhere
        -- if it must; numbers, times and trees do not)
        || 'table{border-collapse:collapse;font-size:13px;max-width:100%}th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;}'
        || 'td.q{overflow-wrap:anywhere;min-width:12em}th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.t{white-space:nowrap}td.tree{white-space:pre;font-family:monospace}'
        || '.ax{font-size:11px;fill:#444}.none{color:#777}.note{color:#a00}ol.findings li{margin-bottom:4px}'
        -- the chart's slices: tabs without script (a radio button each)
        || '.tabs>input{display:none}.tabs>label{display:inline-block;padding:2px 10px;margin:0 4px 6px 0;border:1px solid #ccc;font-size:13px;cursor:pointer}'
        || '.tabs>input:checked+label{background:#e8e8e8;font-weight:bold}.tabs>.panel{display:none}'
        || '#slice-wait_class:checked~#panel-wait_class,#slice-statement:checked~#panel-statement,'
        || '#slice-application:checked~#panel-application,#slice-role:checked~#panel-role{display:block}'
        || '</style></head><body>';
    html := html || pg_catalog.format('<h1>pgsentinel report</h1><p>%s to %s &middot; %s &middot; PostgreSQL %s &middot; generated %s</p>',
                                      to_char((doc->>'since')::timestamptz, 'YYYY-MM-DD HH24:MI:SS TZ'),
                                      to_char((doc->>'until')::timestamptz, 'YYYY-MM-DD HH24:MI:SS TZ'),
                                      replace(replace(replace(CASE WHEN doc->>'server' IS NULL
                                                                   THEN pg_catalog.format('load in %s (report run in database %s)',
                                                                            coalesce('database ' || (SELECT string_agg(pg_catalog.format('%s %s%%', coalesce(regexp_replace(x.key, '[[:cntrl:]]', '?', 'g'), '(none)'), round(x.pct::numeric, 1)), ', ' ORDER BY x.rank)
                                                                                                       FROM jsonb_to_recordset(doc->'top_databases') AS x(rank int, key text, pct float8)
                                                                                                      WHERE x.rank <= 3), 'no database'),
                                                                            doc->>'database')
                                                                   ELSE pg_catalog.format('server %s (repository database %s)',
                                                                                          doc->>'server', doc->>'database') END,
                                                              '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), replace(replace(replace(coalesce(doc->>'server_version', 'unknown'), '&', '&amp;'), '<', '&lt;'), '>', '&gt;'),
                                      to_char((doc->>'generated_at')::timestamptz, 'YYYY-MM-DD HH24:MI:SS TZ'));
    html := html || '<h2>Findings</h2>'
            || CASE WHEN doc->'findings'->0->>'kind' = 'none'
                    THEN '<p class="none">' || replace(replace(replace(doc->'findings'->0->>'finding', '&', '&amp;'), '<', '&lt;'), '>', '&gt;') || '</p>'
                    ELSE '<ol class="findings">' || (SELECT string_agg('<li>' || replace(replace(replace(x.f, '&', '&amp;'), '<', '&lt;'), '>', '&gt;') || '</li>', '' ORDER BY x.n)
                                                       FROM jsonb_array_elements_text(jsonb_path_query_array(doc->'findings', '$[*].finding'))
                                                            WITH ORDINALITY AS x(f, n)) || '</ol>' END;
    IF doc->>'dbname_filter' IS NULL THEN
        SELECT @extschema@.pgsentinel_html_table((doc->'incidents'), ('{started,ended,aas,peak,baseline,top_wait,top_wait_pct,queryid,query,application,root_blocker,blocker}'::text[]), ('{started,ended,AAS,peak,normal,top wait,% of it,queryid,statement,application,root blocker,blocker}'::text[])) INTO tbl;
        html := html || '<h2>Incidents</h2>'
                || CASE WHEN jsonb_array_length(doc->'incidents') = 0
                        THEN '<p class="none">None: the active sessions stayed within their normal.</p>'
                        ELSE tbl END;
        SELECT @extschema@.pgsentinel_html_table((doc->'unusual'->'keys'), ('{dimension,key,aas,usual,ratio,weeks_seen,description}'::text[]), ('{by,key,AAS,usual AAS,ratio,weeks compared,statement}'::text[])) INTO tbl;
        html := html || '<h2>Unusual now</h2>'
                || CASE WHEN (doc->'unusual'->>'keys_seen')::int = 0
                        THEN '<p class="none">Nothing to compare: no load in the last hour.</p>'
                        WHEN (doc->'unusual'->>'weeks_seen')::int = 0
                        THEN '<p class="none">Nothing to compare yet: the history has no earlier week of this hour (it is compared with the same hour of up to 4 weeks before).</p>'
                        WHEN jsonb_array_length(doc->'unusual'->'keys') = 0
                        THEN '<p class="none">Nothing: every wait class and statement of the last hour as in the weeks before.</p>'
                        ELSE tbl END;
    END IF;
    html := html || '<h2>Load profile</h2>' || pg_catalog.format(
        '<table><tr><th>DB time (s)</th><th>average active sessions</th><th>peak</th><th>sessions seen</th><th>coverage</th><th>samples</th><th>CPUs</th><th>pgsentinel itself (s, not in the load)</th></tr>'
        '<tr><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s%%</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td></tr></table>',
        round((l->>'db_time')::numeric, 1), coalesce(round((l->>'aas')::numeric, 2)::text, 'no data'),
        coalesce(l->>'peak', '0'), l->>'sessions', round(100 * (l->>'coverage')::numeric, 1), l->>'samples',
        coalesce(cpus::text, 'unknown'), round((doc->'own_workers'->>'db_time')::numeric, 1));
    IF (l->>'coverage')::numeric < 0.9 THEN
        html := html || '<p class="note">The sampler did not observe the whole window (grey in the chart): average active sessions are over the time observed.</p>';
    END IF;
    html := html || '<h2>DB load</h2><div class="tabs">'
                 || '<input type="radio" name="slice" id="slice-wait_class" checked><label for="slice-wait_class">by wait class</label>'
                 || slices || '<div class="panel" id="panel-wait_class">' || svg || '</div>'
                 || panels || '</div>';
    FOR r IN SELECT * FROM (VALUES
            (1, 'Wait classes', 'wait_classes', '{key,aas,pct,db_time}'::text[],
             '{wait class,AAS,% DB time,DB time (s)}'::text[]),
            (2, 'Top wait events', 'top_events', '{rank,key,aas,pct,db_time}',
             '{#,wait event,AAS,% DB time,DB time (s)}'),
            (3, 'Top SQL', 'top_statements',
             '{rank,queryid,aas,pct,wait_profile,calls_per_s,ms_per_call,rows_per_call,counted,query}',
             '{#,queryid,AAS,% DB time,waits,calls/s,ms/call,rows/call,share of the window counted,statement}'),
            (3.5, 'Top SQL by execution time (every statement, from pg_stat_statements)', 'top_calls',
             '{rank,queryid,exec_s,pct,calls_per_s,ms_per_call,rows_per_call,query}',
             '{#,queryid,execution (s),% execution,calls/s,ms/call,rows/call,statement}'),
            (4, 'Top sessions', 'top_sessions', '{rank,key,description,aas,pct,wait_profile}',
             '{#,pid,session,AAS,% DB time,waits}'),
            (4.5, 'Top session groups', 'top_session_groups', '{rank,key,aas,pct,wait_profile}',
             '{#,role@database application from client,AAS,% DB time,waits}'),
            (5, 'Top applications', 'top_applications', '{rank,key,aas,pct,wait_profile}',
             '{#,application,AAS,% DB time,waits}'),
            (6, 'Top databases', 'top_databases', '{rank,key,aas,pct,wait_profile}',
             '{#,database,AAS,% DB time,waits}'),
            (7, 'Top clients', 'top_clients', '{rank,key,aas,pct,wait_profile}',
             '{#,client,AAS,% DB time,waits}'),
            (8, 'Blocking trees', 'blocking_trees',
             '{tree,blocked_by,who,state,xact_start,wait,seen,sessions,db_time,aas,query}',
             '{root and who waited behind it (pid),blocked by,"role, application, client",state,transaction start,"wait, lock",seen,sessions behind,DB time (s),AAS,statement}'))
             AS v(n, title, section, keys, headers) ORDER BY n
    LOOP
        SELECT @extschema@.pgsentinel_html_table((CASE WHEN r.section = 'blocking_trees' THEN trees
                           ELSE doc->r.section END), r.keys, r.headers) INTO tbl;
        html := html || '<h2>' || r.title || '</h2>' || tbl;
    END LOOP;
    RETURN html || '<p class="none">pgsentinel ' || replace(replace(replace(coalesce(doc->>'pgsentinel_version', 'unknown'), '&', '&amp;'), '<', '&lt;'), '>', '&gt;')
                || ' &middot; PostgreSQL ' || replace(replace(replace(coalesce(doc->>'server_version', 'unknown'), '&', '&amp;'), '<', '&lt;'), '>', '&gt;') || '</p></body></html>';
END
$fn$;
