
-- Reports: the DB load chart for psql (docs/reports.md).

-- The wait classes in the order charts stack them, each with its letter
-- in text charts, its ANSI colour and its colour in HTML: CPU first, as in
-- the DB-load charts DBAs know.  A class not listed (or hidden: NULL) is
-- drawn after them as "Other".
CREATE FUNCTION pgsentinel_wait_classes(
    OUT wait_class text, OUT ord integer, OUT symbol text, OUT ansi text,
    OUT colour text)
RETURNS SETOF record
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
SELECT * FROM (VALUES
    ('CPU', 1, '#', '32', '#2ca02c'),
    ('IO', 2, '=', '34', '#1f77b4'),
    ('Lock', 3, 'L', '31', '#d62728'),
    ('LWLock', 4, 'w', '35', '#e377c2'),
    ('BufferPin', 5, 'b', '33', '#bcbd22'),
    ('IPC', 6, 'i', '36', '#17becf'),
    ('Client', 7, 'c', '90', '#8c564b'),
    ('Timeout', 8, 't', '37', '#9467bd'),
    ('Activity', 9, 'a', '37', '#c5b0d5'),
    ('Extension', 10, 'e', '37', '#ff7f0e'),
    ('Other', 11, '?', '37', '#7f7f7f')) AS c(wait_class, ord, symbol, ansi, colour);
END;

-- The number of CPUs for the DB load chart's CPU line: the setting
-- pgsentinel_report.cpus when set, otherwise what the server's
-- /proc/cpuinfo and cgroup quota say when the caller may read server
-- files (superusers, pg_read_server_files), otherwise NULL.
CREATE FUNCTION pgsentinel_cpu_count()
RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting text := current_setting('pgsentinel_report.cpus', true);
    cpus integer;
    quota text[];
BEGIN
    IF setting ~ '^\s*[0-9]+\s*$' AND setting::integer > 0 THEN
        RETURN setting::integer;
    END IF;
    BEGIN
        SELECT count(*) INTO cpus
          FROM regexp_split_to_table(pg_read_file('/proc/cpuinfo'), E'\n') l
         WHERE l ~ '^processor\s*:';
        IF cpus = 0 THEN
            cpus := NULL;
        END IF;
    EXCEPTION WHEN OTHERS THEN
        RETURN NULL;
    END;
    BEGIN
        quota := regexp_split_to_array(btrim(pg_read_file('/sys/fs/cgroup/cpu.max')), '\s+');
        IF quota[1] ~ '^[0-9]+$' AND quota[2] ~ '^[0-9]+$' THEN
            cpus := least(cpus, greatest(1, ceil(quota[1]::numeric / quota[2]::numeric)::integer));
        END IF;
    EXCEPTION WHEN OTHERS THEN
        NULL;                   -- no cgroup v2 quota: the CPUs the kernel lists
    END;
    RETURN cpus;
END
$$;

-- Average active sessions per bucket, stacked by wait class as text bars
-- (one line per bucket, about 30 unless bucket is given), to fit a
-- terminal of width columns (31 to 1000; NULL: 80); colour adds ANSI
-- colours; cpus (by default
-- this server's, pgsentinel_cpu_count()) draws a ':' at that many
-- sessions, inside a bar that passes it too.  A bucket the sampler did not
-- see says so.
CREATE FUNCTION pgsentinel_chart(
    since timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour',
    until timestamptz DEFAULT pg_catalog.now(),
    bucket interval DEFAULT NULL,
    width integer DEFAULT 80,
    colour boolean DEFAULT false,
    cpus integer DEFAULT NULL,
    dbname text DEFAULT NULL,
    username text DEFAULT NULL,
    application text DEFAULT NULL,
    client text DEFAULT NULL,
    backend text DEFAULT NULL,
    query_id bigint DEFAULT NULL,
    wait_class text DEFAULT NULL,
    event text DEFAULT NULL,
    session_pid integer DEFAULT NULL,
    server text DEFAULT NULL)
RETURNS SETOF text
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH p AS (
    SELECT coalesce(bucket, pgsentinel_auto_bucket(since, until, 30)) AS step,
           CASE WHEN until OPERATOR(pg_catalog.-) since OPERATOR(pg_catalog.>) interval '1 day'
                THEN 'MM-DD HH24:MI' ELSE 'HH24:MI:SS' END AS fmt
     WHERE pgsentinel_check_request(since, until, NULL::pg_catalog.int4, cpus,
                                    dbname, username, wait_class, server, application,
                                    width)
), s AS (
    SELECT x.bucket_start, x.key, x.aas, x.coverage,
           coalesce(c.ord, 11) AS ord, coalesce(c.symbol, '?') AS symbol,
           coalesce(c.ansi, '37') AS ansi, coalesce(c.wait_class, 'Other') AS class
      FROM pgsentinel_aas_series(since, until, (SELECT p.step FROM p), 'wait_class'::pg_catalog.text,
                                 dbname, username, application, client, backend,
                                 query_id, wait_class, event, session_pid, server) x
      LEFT JOIN pgsentinel_wait_classes() c ON c.wait_class OPERATOR(pg_catalog.=) x.key
), t AS (
    SELECT s.bucket_start, pg_catalog.sum(s.aas) AS total, pg_catalog.max(s.coverage) AS coverage
      FROM s GROUP BY s.bucket_start
), c AS (
    -- the CPUs: given, or those of this server (a fleet server's are not)
    SELECT coalesce(cpus, CASE WHEN server IS NULL THEN pgsentinel_cpu_count() END) AS cpus
), m0 AS (
    SELECT greatest(pg_catalog.max(t.total), (SELECT c.cpus FROM c)::pg_catalog.float8,
                    1::pg_catalog.float8) AS top,
           greatest(coalesce(width, 80) OPERATOR(pg_catalog.-) 21, 10) AS barw, (SELECT c.cpus FROM c) AS cpus,
           (SELECT pg_catalog.sum(o.observed) FROM pgsentinel_observed(since, until, 'hour'::pg_catalog.text, server) o)
               OPERATOR(pg_catalog./) pgsentinel_window_seconds(since, until) AS coverage
      FROM t
), m AS (
    -- mk: the column (from 0) of the CPU marker
    SELECT m0.*,
           pg_catalog.round(m0.cpus OPERATOR(pg_catalog.*) m0.barw OPERATOR(pg_catalog./) m0.top)::pg_catalog.int4
               OPERATOR(pg_catalog.-) 1 AS mk
      FROM m0
), seg AS (
    SELECT s.bucket_start, s.ord, s.key, s.symbol, s.ansi,
           pg_catalog.round(pg_catalog.sum(s.aas) OVER w OPERATOR(pg_catalog.*) m.barw
                            OPERATOR(pg_catalog./) m.top)::pg_catalog.int4 AS e,
           pg_catalog.round((pg_catalog.sum(s.aas) OVER w OPERATOR(pg_catalog.-) s.aas)
                            OPERATOR(pg_catalog.*) m.barw OPERATOR(pg_catalog./) m.top)::pg_catalog.int4 AS b
      FROM s CROSS JOIN m
    WINDOW w AS (PARTITION BY s.bucket_start ORDER BY s.ord, s.key
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
), segtext AS (
    -- a bar past the CPUs shows the marker in the segment it crosses
    SELECT seg.*,
           CASE WHEN m.mk OPERATOR(pg_catalog.>=) seg.b AND m.mk OPERATOR(pg_catalog.<) seg.e
                THEN pg_catalog.concat(pg_catalog.repeat(seg.symbol, m.mk OPERATOR(pg_catalog.-) seg.b), ':',
                                       pg_catalog.repeat(seg.symbol, seg.e OPERATOR(pg_catalog.-) m.mk
                                                                     OPERATOR(pg_catalog.-) 1))
                ELSE pg_catalog.repeat(seg.symbol, seg.e OPERATOR(pg_catalog.-) seg.b) END AS txt
      FROM seg CROSS JOIN m
), bars AS (
    SELECT seg.bucket_start,
           coalesce(pg_catalog.string_agg(
               CASE WHEN colour THEN pg_catalog.concat(pg_catalog.chr(27), '[', seg.ansi, 'm',
                                                       seg.txt, pg_catalog.chr(27), '[0m')
                    ELSE seg.txt END,
               '' ORDER BY seg.ord, seg.key) FILTER (WHERE seg.e OPERATOR(pg_catalog.>) seg.b), '') AS bar,
           coalesce(pg_catalog.max(seg.e), 0) AS len
      FROM segtext seg GROUP BY seg.bucket_start
), lines AS (
    SELECT 1 AS n, pg_catalog.format('DB load by wait class%s, %s to %s',
                                     CASE WHEN server IS NOT NULL
                                          THEN pg_catalog.format(' of server %s', server)
                                          ELSE '' END,
                                     pg_catalog.to_char(since, 'YYYY-MM-DD HH24:MI:SS TZ'),
                                     pg_catalog.to_char(until, 'YYYY-MM-DD HH24:MI:SS TZ')) AS line
    UNION ALL
    SELECT 2, pg_catalog.format('one line per %s; full bar = %s sessions%s',
                                (SELECT p.step FROM p),
                                pg_catalog.round(m.top::pg_catalog.numeric, 2),
                                CASE WHEN m.cpus IS NOT NULL
                                     THEN pg_catalog.format('; '':'' at %s CPUs', m.cpus) END)
      FROM m
    UNION ALL
    SELECT 3, pg_catalog.string_agg(
                  CASE WHEN colour THEN pg_catalog.concat(pg_catalog.chr(27), '[', l.ansi, 'm',
                                                          l.symbol, pg_catalog.chr(27), '[0m ', l.class)
                       ELSE pg_catalog.concat(l.symbol, ' ', l.class) END,
                  '  ' ORDER BY l.ord)
      FROM (SELECT DISTINCT s.ord, s.symbol, s.ansi, s.class FROM s
             WHERE s.aas OPERATOR(pg_catalog.>) 0::pg_catalog.float8) l
    UNION ALL
    SELECT 10 OPERATOR(pg_catalog.+) pg_catalog.row_number() OVER (ORDER BY t.bucket_start),
           pg_catalog.concat(
               pg_catalog.to_char(t.bucket_start, (SELECT p.fmt FROM p)), ' ',
               pg_catalog.lpad(CASE WHEN t.coverage OPERATOR(pg_catalog.=) 0::pg_catalog.float8
                                    THEN '-' ELSE pg_catalog.to_char(t.total, 'FM99990.00') END, 8),
               ' |',
               CASE WHEN t.coverage OPERATOR(pg_catalog.=) 0::pg_catalog.float8
                    THEN ' (no samples)'
                    ELSE pg_catalog.concat(b.bar,
                        CASE WHEN m.mk OPERATOR(pg_catalog.>=) b.len
                             THEN pg_catalog.concat(
                                 pg_catalog.repeat(' ', m.mk OPERATOR(pg_catalog.-) b.len), ':') END) END)
      FROM t JOIN bars b ON b.bucket_start OPERATOR(pg_catalog.=) t.bucket_start
     CROSS JOIN m
    UNION ALL
    SELECT 1000000, pg_catalog.format('coverage: %s%% of the window observed',
                                      pg_catalog.round((100::pg_catalog.float8 OPERATOR(pg_catalog.*)
                                                        coalesce(m.coverage, 0::pg_catalog.float8))::pg_catalog.numeric, 1))
      FROM m
)
SELECT lines.line FROM lines ORDER BY lines.n;
END;
