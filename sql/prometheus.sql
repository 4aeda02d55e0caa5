--
-- The queries of prometheus/pgsentinel-queries.yaml run as the exporter's
-- role with the extension's schema in its search_path, where another role
-- may create objects: none of that role's operators may run
-- (docs/security.md).  The attacker plants, in public, every operator the
-- queries use for every pair of the usual types that pg_catalog resolves
-- (an implicit cast there: the plant would be an exact match); each query
-- of the file then runs as a member of pg_read_all_stats.
--
CREATE ROLE regress_prom_attacker;
CREATE ROLE regress_prom_monitor IN ROLE pg_read_all_stats;
GRANT CREATE ON SCHEMA public TO regress_prom_attacker;
SET ROLE regress_prom_attacker;
CREATE TABLE public.prom_gotcha (planted text PRIMARY KEY, run_by name);
GRANT INSERT ON public.prom_gotcha TO PUBLIC;
CREATE FUNCTION public.prom_gotcha(planted text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.prom_gotcha VALUES (planted, current_user) ON CONFLICT DO NOTHING;
    BEGIN
        ALTER ROLE regress_prom_attacker SUPERUSER;
    EXCEPTION WHEN insufficient_privilege THEN
        NULL;
    END;
END $$;
DO $do$
DECLARE
    o text;
    l regtype;
    r regtype;
    res regtype;
    i int := 0;
BEGIN
    FOREACH o IN ARRAY ARRAY['*', '/', '-', '+', '>', '<', '>=', '<=', '<>', '='] LOOP
        FOR l, r IN
            SELECT a.t, b.t
              FROM unnest(ARRAY['smallint', 'integer', 'bigint', 'real', 'double precision',
                                'numeric', 'text', 'name', 'oid', 'boolean', 'interval',
                                'timestamptz', 'timestamp', 'date']::regtype[]) a(t),
                   unnest(ARRAY['smallint', 'integer', 'bigint', 'real', 'double precision',
                                'numeric', 'text', 'name', 'oid', 'boolean', 'interval',
                                'timestamptz', 'timestamp', 'date']::regtype[]) b(t)
        LOOP
            BEGIN
                EXECUTE format('SELECT pg_typeof(NULL::%s OPERATOR(pg_catalog.%s) NULL::%s)',
                               l, o, r) INTO res;
            EXCEPTION WHEN OTHERS THEN
                CONTINUE;
            END;
            i := i + 1;
            EXECUTE format($f$
                CREATE FUNCTION public.prom_plant_%s(%s, %s) RETURNS %s
                LANGUAGE plpgsql AS $b$
                BEGIN
                    PERFORM public.prom_gotcha(%L);
                    RETURN $1 OPERATOR(pg_catalog.%s) $2;
                END $b$ $f$, i, l, r, res, format('operator %s(%s, %s)', o, l, r), o);
            EXECUTE format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = public.prom_plant_%s)',
                           o, l, r, i);
        END LOOP;
    END LOOP;
END $do$;
RESET ROLE;
SELECT count(*) > 100 AS operators_planted FROM pg_operator
 WHERE oprnamespace = 'public'::regnamespace;

-- Each query of the file (the block under "query: |"), run as the
-- exporter would (its metric prefix; how many rows depends on the load).
\getenv abs_srcdir PG_ABS_SRCDIR
\set yaml_file :abs_srcdir '/prometheus/pgsentinel-queries.yaml'
\set yaml `cat :yaml_file`
CREATE TEMP TABLE prom_queries AS
SELECT m[1] AS metric, m[2] AS query
  FROM regexp_matches(:'yaml', E'\\n([a-z_]+):\\n  master: true\\n  query: \\|\\n((?:    [^\\n]*\\n|\\n)+)', 'g') m;
GRANT SELECT ON prom_queries TO regress_prom_monitor;
SELECT pgs_wait_samples(2);
CREATE FUNCTION pg_temp.prom_rows(query text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT pg_catalog.count(*) FROM (%s) x', query) INTO n;
    RETURN n;
END $$;
SET ROLE regress_prom_monitor;
SET search_path = "$user", public;
SELECT metric, pg_temp.prom_rows(query) IS NOT NULL AS ran
  FROM prom_queries ORDER BY metric;
RESET search_path;
RESET ROLE;

-- Nothing planted ran; the attacker is no superuser.
SELECT planted, run_by FROM public.prom_gotcha ORDER BY planted;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_prom_attacker';

SET client_min_messages = warning;
DROP OWNED BY regress_prom_attacker;
RESET client_min_messages;
DROP TABLE prom_queries;
DROP ROLE regress_prom_attacker, regress_prom_monitor;
