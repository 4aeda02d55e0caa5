--
-- Installing or updating pgsentinel in a schema where another role may
-- create objects never binds nor runs that role's objects (docs/security.md).
-- The extension's scripts run as superuser with the search_path set to the
-- installation schema, so an operator or function that matches a reference
-- of ours more closely than pg_catalog's would be bound into our views and
-- SQL-standard function bodies, and run by whoever calls them.
--
-- EVERY NEW SQL OBJECT OF pgsentinel JOINS THIS TEST: give each new function,
-- view or table a call in pgs_calls below (the test prints "NOT CALLED" for
-- a member without one).  The planted objects need no editing: they are
-- derived from pg_depend (every pg_catalog operator, function, aggregate and
-- window function that our objects reference, each planted for every
-- combination of the types listed in pgs_types), and the list is printed so
-- that a new name shows in the expected output.
--

-- The attacker: an ordinary role that owns a schema.  Whatever a planted
-- object runs records itself in gotcha and tries to make its owner
-- superuser.
CREATE ROLE regress_pgs_attacker;
CREATE SCHEMA pgs_trap AUTHORIZATION regress_pgs_attacker;
SET ROLE regress_pgs_attacker;
CREATE TABLE pgs_trap.gotcha (planted text PRIMARY KEY, run_by name);
GRANT INSERT ON pgs_trap.gotcha TO PUBLIC;
CREATE FUNCTION pgs_trap.gotcha(planted text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pgs_trap.gotcha VALUES (planted, current_user)
    ON CONFLICT DO NOTHING;
    IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles
            WHERE rolname = 'regress_pgs_attacker') THEN
        BEGIN
            ALTER ROLE regress_pgs_attacker SUPERUSER;
        EXCEPTION WHEN insufficient_privilege THEN
            NULL;
        END;
    END IF;
END $$;
RESET ROLE;

-- What our objects depend on, from pg_depend: what the rewrite rules of
-- views and the bodies (BEGIN ATOMIC) and parameter defaults of functions
-- reference.  pg_depend omits the pinned objects of pg_catalog but records
-- every other: a planted object bound by our SQL shows here.
CREATE TEMP VIEW pgs_members AS
SELECT d.classid, d.objid,
       CASE d.classid
         WHEN 'pg_proc'::regclass THEN
           -- (our own types unqualified, wherever we are installed)
           (SELECT 'function ' || p.proname || '(' ||
                   replace(oidvectortypes(p.proargtypes),
                           (SELECT quote_ident(n.nspname) || '.'
                              FROM pg_extension e
                              JOIN pg_namespace n ON n.oid = e.extnamespace
                             WHERE e.extname = 'pgsentinel'), '') || ')'
            FROM pg_proc p WHERE p.oid = d.objid)
         WHEN 'pg_class'::regclass THEN
           (SELECT 'relation ' || c.relname FROM pg_class c WHERE c.oid = d.objid)
         ELSE pg_describe_object(d.classid, d.objid, 0)
       END AS member
FROM pg_depend d
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgsentinel')
  -- (PostgreSQL 18 lists the row types of our relations, and their
  -- arrays, as members too: they come and go with the relations)
  AND NOT EXISTS (SELECT 1 FROM pg_type t
                  LEFT JOIN pg_type e ON e.oid = t.typelem
                  WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                    AND (t.typrelid <> 0 OR e.typrelid <> 0));
CREATE TEMP VIEW pgs_refs AS
SELECT d.refclassid, d.refobjid
FROM pg_depend d
JOIN (SELECT classid, objid FROM pgs_members
      UNION ALL
      SELECT 'pg_rewrite'::regclass, r.oid
      FROM pg_rewrite r JOIN pgs_members m
        ON m.classid = 'pg_class'::regclass AND r.ev_class = m.objid) o
  ON d.classid = o.classid AND d.objid = o.objid
WHERE d.deptype = 'n';

-- Referenced objects that the attacker planted (none may ever be).
CREATE TEMP VIEW pgs_bound_plants AS
SELECT pg_describe_object(r.refclassid, r.refobjid, 0) AS bound_plant
FROM pgs_refs r
WHERE (pg_identify_object(r.refclassid, r.refobjid, 0)).schema = 'pgs_trap'
  AND NOT EXISTS (SELECT 1 FROM pgs_members m
                  WHERE m.classid = r.refclassid AND m.objid = r.refobjid)
  -- (the row type of one of our views, which functions return)
  AND NOT EXISTS (SELECT 1 FROM pg_type t JOIN pgs_members m
                    ON m.classid = 'pg_class'::regclass AND m.objid = t.typrelid
                  WHERE r.refclassid = 'pg_type'::regclass AND t.oid = r.refobjid);

-- The pg_catalog operators and functions our SQL uses, read from the
-- parse trees stored for our views, function bodies and parameter
-- defaults (the operators of expressions, NULLIF and IN, sorting and
-- grouping; functions, casts, aggregates and window functions).
CREATE TEMP VIEW pgs_catalog_refs AS
SELECT DISTINCT x[1] AS field, x[2]::oid AS oid
FROM (SELECT p.prosqlbody::text AS tree
      FROM pgs_members m JOIN pg_proc p
        ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
      WHERE p.prosqlbody IS NOT NULL
      UNION ALL
      SELECT p.proargdefaults::text
      FROM pgs_members m JOIN pg_proc p
        ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
      WHERE p.proargdefaults IS NOT NULL
      UNION ALL
      SELECT r.ev_action::text
      FROM pgs_members m JOIN pg_rewrite r
        ON m.classid = 'pg_class'::regclass AND r.ev_class = m.objid) t,
     regexp_matches(t.tree, ':(opno|eqop|sortop|funcid|aggfnoid|winfnoid) ([0-9]+)', 'g') x;

-- The names to plant, from the normal installation of setup.sql (public).
CREATE TEMP TABLE pgs_names AS
SELECT DISTINCT 'operator' AS kind, o.oprname::text AS name,
       CASE o.oprkind WHEN 'b' THEN 2 ELSE 1 END AS nargs
FROM pgs_catalog_refs r JOIN pg_operator o ON o.oid = r.oid
WHERE r.field IN ('opno', 'eqop', 'sortop')
  AND o.oprnamespace = 'pg_catalog'::regnamespace
UNION
SELECT DISTINCT CASE p.prokind WHEN 'f' THEN 'function' WHEN 'w' THEN 'window'
                ELSE 'aggregate' END, p.proname::text, p.pronargs::int
FROM pgs_catalog_refs r JOIN pg_proc p ON p.oid = r.oid
WHERE r.field IN ('funcid', 'aggfnoid', 'winfnoid')
  AND p.pronamespace = 'pg_catalog'::regnamespace;
SELECT kind, name, nargs FROM pgs_names ORDER BY 1, 2, 3;

-- The operand types: those of our columns and arguments and of what we
-- reference, and the usual suspects of arithmetic and comparisons.
CREATE TEMP TABLE pgs_types AS
SELECT DISTINCT t.oid::regtype AS type
FROM pg_type t
WHERE t.typtype IN ('b', 'd', 'e', 'r') AND t.typisdefined
  AND (t.oid IN (SELECT unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]))
                 FROM pgs_members m JOIN pg_proc p
                   ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid)
       OR t.oid IN (SELECT a.atttypid FROM pgs_members m JOIN pg_attribute a
                      ON m.classid = 'pg_class'::regclass AND a.attrelid = m.objid
                    WHERE a.attnum > 0)
       OR t.oid IN (SELECT unnest(ARRAY[o.oprleft, o.oprright, o.oprresult])
                    FROM pgs_catalog_refs r JOIN pg_operator o ON o.oid = r.oid
                    WHERE r.field IN ('opno', 'eqop', 'sortop'))
       OR t.oid IN (SELECT unnest(p.proargtypes::oid[] || p.prorettype)
                    FROM pgs_catalog_refs r JOIN pg_proc p ON p.oid = r.oid
                    WHERE r.field IN ('funcid', 'aggfnoid', 'winfnoid'))
       OR t.oid IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype,
                    'real'::regtype, 'double precision'::regtype, 'numeric'::regtype,
                    'text'::regtype, 'boolean'::regtype, 'oid'::regtype,
                    'timestamptz'::regtype, 'timestamp'::regtype, 'interval'::regtype));
GRANT SELECT ON pgs_names, pgs_types TO regress_pgs_attacker;

-- The attacker plants, in pgs_trap, each name for every combination of
-- those types that pg_catalog resolves (with implicit casts, possibly: a
-- plant with the exact types then wins), returning what pg_catalog would.
-- Aggregates and window functions are planted as aggregates (usable with
-- OVER).  Functions with more than two arguments get the same type in all.
-- (Thousands of statements: pg_stat_statements would evict the entries of
-- the statements whose history this test waits for.)
SET pg_stat_statements.track = none;
SET ROLE regress_pgs_attacker;
DO $do$
DECLARE
    n record;
    l regtype;
    r regtype;
    sig text;
    args text;
    res regtype;
    i int := 0;
BEGIN
    FOR n IN SELECT * FROM pgs_names ORDER BY kind, name, nargs LOOP
        FOR l, r IN
            SELECT t1.type, t2.type FROM pgs_types t1, pgs_types t2
            WHERE n.nargs = 2
               OR (n.nargs = 0 AND t1.type = 'integer'::regtype AND t2.type = t1.type)
               OR (n.nargs NOT IN (0, 2) AND t2.type = t1.type)
        LOOP
            i := i + 1;
            IF n.nargs = 0 THEN
                sig := '';
                args := '';
            ELSIF n.nargs = 1 THEN
                sig := format('%s', l);
                args := format('NULL::%s', l);
            ELSIF n.nargs = 2 THEN
                sig := format('%s, %s', l, r);
                args := format('NULL::%s, NULL::%s', l, r);
            ELSE
                sig := array_to_string(array_fill(l::text, ARRAY[n.nargs]), ', ');
                args := array_to_string(array_fill('NULL::' || l, ARRAY[n.nargs]), ', ');
            END IF;
            BEGIN
                IF n.kind = 'operator' AND n.nargs = 2 THEN
                    EXECUTE format('SELECT pg_typeof(NULL::%s OPERATOR(pg_catalog.%s) NULL::%s)',
                                   l, n.name, r) INTO res;
                ELSIF n.kind = 'operator' THEN
                    EXECUTE format('SELECT pg_typeof(OPERATOR(pg_catalog.%s) NULL::%s)',
                                   n.name, l) INTO res;
                ELSIF n.kind = 'window' THEN
                    EXECUTE format('SELECT pg_typeof(pg_catalog.%I(%s) OVER ())',
                                   n.name, args) INTO res;
                ELSE
                    EXECUTE format('SELECT pg_typeof(pg_catalog.%I(%s))',
                                   n.name, args) INTO res;
                    -- a set-returning function gives no row for NULLs:
                    -- its type is that of a view's column
                    IF res IS NULL THEN
                        EXECUTE format('CREATE TEMP VIEW pgs_srf_type AS SELECT pg_catalog.%I(%s) AS x',
                                       n.name, args);
                        SELECT a.atttypid::regtype INTO res FROM pg_attribute a
                        WHERE a.attrelid = 'pgs_srf_type'::regclass AND a.attname = 'x';
                        DROP VIEW pgs_srf_type;
                    END IF;
                END IF;
            EXCEPTION WHEN OTHERS THEN
                CONTINUE;       -- pg_catalog cannot do it: nothing to shadow
            END;
            IF res IS NULL AND n.kind = 'function' AND n.nargs = 1 THEN
                -- a set-returning function of an array (unnest): no row
                -- for NULL, so no type; it returns the elements
                SELECT t.typelem::regtype INTO res
                FROM pg_type t WHERE t.oid = l AND t.typelem <> 0;
                IF res IS NULL THEN
                    CONTINUE;
                END IF;
                EXECUTE format($f$
                    CREATE FUNCTION pgs_trap.%I(%s) RETURNS SETOF %s
                    LANGUAGE plpgsql AS $b$
                    BEGIN
                        PERFORM pgs_trap.gotcha(%L);
                        RETURN QUERY SELECT pg_catalog.%I($1);
                    END $b$ $f$,
                    n.name, sig, res, format('function %s(%s)', n.name, sig), n.name);
                CONTINUE;
            END IF;
            IF res IS NULL OR
               res IN ('record'::regtype, 'void'::regtype, 'unknown'::regtype) THEN
                CONTINUE;
            END IF;
            IF n.kind = 'operator' THEN
                EXECUTE format($f$
                    CREATE FUNCTION pgs_trap.plant_%s(%s) RETURNS %s
                    LANGUAGE plpgsql AS $b$
                    BEGIN
                        PERFORM pgs_trap.gotcha(%L);
                        RETURN %s;
                    END $b$ $f$,
                    i, sig, res,
                    format('operator %s(%s)', n.name, sig),
                    CASE WHEN n.nargs = 2 THEN format('$1 OPERATOR(pg_catalog.%s) $2', n.name)
                         ELSE format('OPERATOR(pg_catalog.%s) $1', n.name) END);
                IF n.nargs = 2 THEN
                    EXECUTE format('CREATE OPERATOR pgs_trap.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = pgs_trap.plant_%s)',
                                   n.name, l, r, i);
                ELSE
                    EXECUTE format('CREATE OPERATOR pgs_trap.%s (RIGHTARG = %s, FUNCTION = pgs_trap.plant_%s)',
                                   n.name, l, i);
                END IF;
            ELSIF n.kind = 'function' AND EXISTS (
                    SELECT 1 FROM pg_proc p
                    WHERE p.proname = n.name AND p.proretset
                      AND p.pronamespace = 'pg_catalog'::regnamespace) THEN
                EXECUTE format($f$
                    CREATE FUNCTION pgs_trap.%I(%s) RETURNS SETOF %s
                    LANGUAGE plpgsql AS $b$
                    BEGIN
                        PERFORM pgs_trap.gotcha(%L);
                        RETURN QUERY SELECT * FROM pg_catalog.%I(%s);
                    END $b$ $f$,
                    n.name, sig, res, format('function %s(%s)', n.name, sig), n.name,
                    (SELECT string_agg('$' || k, ', ') FROM generate_series(1, n.nargs) k));
            ELSIF n.kind = 'function' THEN
                EXECUTE format($f$
                    CREATE FUNCTION pgs_trap.%I(%s) RETURNS %s
                    LANGUAGE plpgsql AS $b$
                    BEGIN
                        PERFORM pgs_trap.gotcha(%L);
                        RETURN pg_catalog.%I(%s);
                    END $b$ $f$,
                    n.name, sig, res, format('function %s(%s)', n.name, sig), n.name,
                    (SELECT string_agg('$' || k, ', ') FROM generate_series(1, n.nargs) k));
            ELSE
                -- an aggregate whose state is the last value (or NULL)
                EXECUTE format($f$
                    CREATE FUNCTION pgs_trap.plant_%s(%s) RETURNS %s
                    LANGUAGE plpgsql AS $b$
                    BEGIN
                        PERFORM pgs_trap.gotcha(%L);
                        RETURN %s;
                    END $b$ $f$,
                    i, concat_ws(', ', res::text, nullif(sig, '')), res,
                    format('%s %s(%s)', n.kind, n.name, sig),
                    CASE WHEN l = res AND n.nargs > 0 THEN '$2' ELSE '$1' END);
                EXECUTE format('CREATE AGGREGATE pgs_trap.%I(%s) (SFUNC = pgs_trap.plant_%s, STYPE = %s)',
                               n.name, CASE WHEN n.nargs = 0 THEN '*' ELSE sig END, i, res);
            END IF;
        END LOOP;
    END LOOP;
END $do$;
RESET ROLE;
RESET pg_stat_statements.track;

-- Planted: each name, for type combinations (operators: many of them).
SELECT n.kind, n.name,
       CASE WHEN n.kind = 'operator' THEN count(p.name) >= 20
            ELSE count(p.name) > 0 END AS planted
FROM pgs_names n
LEFT JOIN (SELECT 'operator' AS kind, oprname::text AS name FROM pg_operator
           WHERE oprnamespace = 'pgs_trap'::regnamespace
           UNION ALL
           SELECT CASE prokind WHEN 'f' THEN 'function' ELSE 'aggregate' END, proname::text
           FROM pg_proc WHERE pronamespace = 'pgs_trap'::regnamespace) p
  ON p.name = n.name AND (p.kind = n.kind OR (n.kind = 'window' AND p.kind = 'aggregate'))
GROUP BY 1, 2 ORDER BY 1, 2;

-- The attacker also overloads our own functions: a variadic overload must
-- lose to ours, never be chosen.
SET ROLE regress_pgs_attacker;
CREATE FUNCTION pgs_trap.get_parsedinfo(VARIADIC int[]) RETURNS SETOF record
LANGUAGE plpgsql AS $$ BEGIN PERFORM pgs_trap.gotcha('get_parsedinfo(VARIADIC int[])'); END $$;
CREATE FUNCTION pgs_trap.pg_stat_statements_history_deltas(VARIADIC timestamptz[])
RETURNS SETOF record
LANGUAGE plpgsql AS $$ BEGIN PERFORM pgs_trap.gotcha('pg_stat_statements_history_deltas(VARIADIC timestamptz[])'); END $$;
RESET ROLE;

-- The attacker overloads our own functions with the types that an
-- untyped literal or NULL prefers (text), and with those that implicitly
-- cast to ours: for every number of arguments a call may pass (ours take
-- defaults), each argument in turn (named as ours, for calls in named
-- notation), and all of them as text.  A call of ours that passes an
-- argument not of exactly the declared type would choose the plant
-- (docs/security.md).  Plants identical to ours, or to a call of ours
-- that omits defaults, would only make the call ambiguous: not planted.
CREATE TEMP TABLE pgs_own AS
SELECT p.proname::text AS name, ARRAY(SELECT unnest(p.proargtypes::oid[])) AS types,
       -- (PL/pgSQL refuses an input named as an output column)
       ARRAY(SELECT CASE WHEN n = ANY (p.proargnames[p.pronargs + 1:]) THEN NULL ELSE n END
             FROM unnest(p.proargnames[1:p.pronargs]) WITH ORDINALITY a(n, i)
             ORDER BY i) AS names,
       p.pronargs - p.pronargdefaults AS required,
       p.proretset AS retset,
       -- (a row type of ours would tie the plant to the extension)
       CASE WHEN EXISTS (SELECT 1 FROM pg_type t JOIN pgs_members r
                           ON r.classid = 'pg_class'::regclass AND r.objid = t.typrelid
                         WHERE t.oid = p.prorettype)
            THEN 'SETOF record' ELSE pg_get_function_result(p.oid) END AS result
FROM pgs_members m JOIN pg_proc p
  ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
WHERE p.pronargs > 0 AND p.prokind = 'f'
  AND p.prorettype NOT IN ('trigger'::regtype, 'fdw_handler'::regtype);
CREATE TEMP TABLE pgs_own_plants AS
WITH k AS (
  SELECT o.*, k FROM pgs_own o, generate_series(o.required, cardinality(o.types)) k
  WHERE k > 0),
variant AS (
  -- all text
  SELECT k.name, k.names, k.retset, k.result,
         array_fill('text'::regtype::oid, ARRAY[k.k]) AS types
  FROM k
  UNION
  -- one argument of another type
  SELECT k.name, k.names, k.retset, k.result,
         k.types[1:i - 1] || t.type || k.types[i + 1:k.k]
  FROM k, generate_series(1, k.k) i,
       LATERAL (SELECT 'text'::regtype::oid AS type
                UNION
                SELECT c.castsource FROM pg_cast c
                WHERE c.casttarget = k.types[i] AND c.castcontext = 'i'
                  AND c.castsource IN (SELECT type FROM pgs_types)) t)
SELECT DISTINCT v.name, v.types, v.names[1:cardinality(v.types)] AS names,
       v.retset, v.result
FROM variant v
WHERE NOT EXISTS (SELECT 1 FROM pgs_own o
                  WHERE o.name = v.name
                    AND o.types[1:cardinality(v.types)] = v.types
                    AND cardinality(v.types) >= o.required);
GRANT SELECT ON pgs_own_plants TO regress_pgs_attacker;
SET pg_stat_statements.track = none;
SET ROLE regress_pgs_attacker;
DO $do$
DECLARE
    v record;
    sig text;
BEGIN
    FOR v IN SELECT * FROM pgs_own_plants ORDER BY name, types LOOP
        SELECT string_agg(coalesce(quote_ident(nullif(v.names[i], '')) || ' ', '') || v.types[i]::regtype::text, ', ' ORDER BY i)
          INTO sig FROM generate_series(1, cardinality(v.types)) i;
        EXECUTE format($f$
            CREATE FUNCTION pgs_trap.%I(%s) RETURNS %s
            LANGUAGE plpgsql AS $b$
            BEGIN
                PERFORM pgs_trap.gotcha(%L);
                RETURN%s;
            END $b$ $f$,
            v.name, sig, v.result,
            format('function %s(%s)', v.name,
                   (SELECT string_agg(t::regtype::text, ', ') FROM unnest(v.types) t)),
            CASE WHEN v.retset OR v.result = 'void' THEN '' ELSE ' NULL' END);
    END LOOP;
END $do$;
RESET ROLE;
RESET pg_stat_statements.track;
SELECT count(*) > 100 AS own_names_planted FROM pgs_own_plants;

-- Every member of the extension, called or read.  A member without a call
-- fails this test: add one.  %1$I is the installation schema.
CREATE TEMP TABLE pgs_calls (member text PRIMARY KEY, call text,
                             last boolean DEFAULT false);
INSERT INTO pgs_calls VALUES
  ('relation pg_active_session_history',
   'SELECT count(*) >= 0 FROM %1$I.pg_active_session_history'),
  ('relation pg_stat_statements_history',
   'SELECT count(*) >= 0 FROM %1$I.pg_stat_statements_history'),
  ('relation pgsentinel_ash_ring',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ash_ring'),
  ('function pg_active_session_history()',
   'SELECT count(*) >= 0 FROM %1$I.pg_active_session_history()'),
  ('function pg_stat_statements_history()',
   'SELECT count(*) >= 0 FROM %1$I.pg_stat_statements_history()'),
  ('function get_parsedinfo(integer)',
   'SELECT count(*) = 1 FROM %1$I.get_parsedinfo(pg_backend_pid())'),
  ('function pgsentinel_status()',
   'SELECT count(*) = 1 FROM %1$I.pgsentinel_status()'),
  -- rows to compute, so that the planted operators would run if bound
  ('function pg_stat_statements_history_deltas(timestamp with time zone, timestamp with time zone)',
   'SELECT count(*) > 0 FROM %1$I.pg_stat_statements_history_deltas()'),
  ('function pg_stat_statements_history_rates(timestamp with time zone, timestamp with time zone)',
   'SELECT count(*) > 0 FROM %1$I.pg_stat_statements_history_rates()'),
  -- the reports (docs/reports.md)
  ('function pgsentinel_aas(timestamp with time zone, timestamp with time zone, text, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) = 1 FROM %1$I.pgsentinel_aas()'),
  ('function pgsentinel_aas_series(timestamp with time zone, timestamp with time zone, interval, text, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) >= 60 FROM %1$I.pgsentinel_aas_series()'),
  ('function pgsentinel_aas_series_of(timestamp with time zone, timestamp with time zone, interval, text[], text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT pg_catalog.count(DISTINCT by) OPERATOR(pg_catalog.=) 2 FROM %1$I.pgsentinel_aas_series_of(pg_catalog.now() OPERATOR(pg_catalog.-) ''1 hour''::interval, pg_catalog.now(), NULL::interval, ''{wait_class,role}''::text[])'),
  ('function pgsentinel_ash(timestamp with time zone, timestamp with time zone, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ash()'),
  ('function pgsentinel_auto_bucket(timestamp with time zone, timestamp with time zone, integer)',
   'SELECT %1$I.pgsentinel_auto_bucket(now() - interval ''1 day'', now()) = interval ''30 minutes'''),
  ('function pgsentinel_blocking_trees(timestamp with time zone, timestamp with time zone, text, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_blocking_trees()'),
  ('function pgsentinel_chart(timestamp with time zone, timestamp with time zone, interval, integer, boolean, integer, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) > 30 FROM %1$I.pgsentinel_chart(colour => true, cpus => 2)'),
  ('function pgsentinel_compare(timestamp with time zone, timestamp with time zone, timestamp with time zone, timestamp with time zone, text, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) >= 1 FROM %1$I.pgsentinel_compare(now() - interval ''1 hour'', now() - interval ''30 minutes'', now() - interval ''30 minutes'', now())'),
  ('function pgsentinel_cpu_count()',
   'SELECT %1$I.pgsentinel_cpu_count() IS NULL OR %1$I.pgsentinel_cpu_count() > 0'),
  ('function pgsentinel_dimension(text)',
   'SELECT %1$I.pgsentinel_dimension(''statement'') = ''statement'''),
  ('function pgsentinel_dimension_key(text, text, text, bigint, integer, text, text, text, text, text)',
   'SELECT %1$I.pgsentinel_dimension_key(''wait_event'', ''IO'', ''DataFileRead'', 1::bigint, 2, ''d'', ''u'', ''a'', ''c'', ''b'') = ''IO:DataFileRead'''),
  ('function pgsentinel_html_table(jsonb, text[], text[])',
   'SELECT %1$I.pgsentinel_html_table(''[{"a": 1.234, "b": "<x>"}]''::jsonb, ''{a,b}''::text[], ''{A,B}''::text[]) LIKE ''%%1.23%%&lt;x&gt;%%'''),
  ('function pgsentinel_periods(timestamp with time zone, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) = 8 FROM %1$I.pgsentinel_periods()'),
  ('function pgsentinel_report(timestamp with time zone, timestamp with time zone, text, integer, integer, text, text)',
   'SELECT length(%1$I.pgsentinel_report()) > 0 AND length(%1$I.pgsentinel_report(format => ''json'')) > 0
           AND (pgs_fleet_here() IS NULL OR %1$I.pgsentinel_report(server => ''hostile'') LIKE ''%%server hostile%%'')'),
  ('function pgsentinel_report_findings(jsonb)',
   'SELECT %1$I.pgsentinel_report_findings(''{"load": {"db_time": 100, "observed": 100}, "cpus": 1, "wait_classes": [{"key": "CPU", "aas": 1}], "top_events": [{"key": "IO:DataFileRead", "db_time": 60}], "top_statements": [], "blocking_trees": []}''::pg_catalog.jsonb)->0->>''finding'' LIKE ''Sessions waited on IO:DataFileRead for reads %%'''),
  ('function pgsentinel_report_html(jsonb)',
   'SELECT %1$I.pgsentinel_report(format => ''html'', cpus => 2) LIKE ''%%<svg %%'''),
  ('function pgsentinel_blocking_merge(jsonb, text)',
   'SELECT pg_catalog.bool_and(m.samples OPERATOR(pg_catalog.=) 7::pg_catalog.int8) FROM %1$I.pgsentinel_blocking_merge(''[{"bucket": "2030-01-01 10:05+00", "kind": "b", "root_pid": 7, "pid": 100, "samples": 3, "db_time": 1.5, "last_time": "2030-01-01 10:05:58+00"}, {"bucket": "2030-01-01 10:06+00", "kind": "b", "root_pid": 7, "pid": 100, "samples": 4, "db_time": 2, "last_time": "2030-01-01 10:06:30+00"}]''::pg_catalog.jsonb, ''hour'') m'),
  ('function pgsentinel_buckets(timestamp with time zone, timestamp with time zone, interval, timestamp with time zone)',
   'SELECT pg_catalog.array_agg(b.secs ORDER BY b.bucket_start)::text OPERATOR(pg_catalog.=) ''{30,60}'' FROM %1$I.pgsentinel_buckets(timestamptz ''2026-01-01 00:00:30+00'', timestamptz ''2026-01-01 00:02:00+00'', interval ''1 minute'', timestamptz ''2000-01-01 00:00:00+00'') b'),
  ('function pgsentinel_series_bucket(timestamp with time zone, timestamp with time zone, interval)',
   'SELECT %1$I.pgsentinel_series_bucket(now() - interval ''1 hour'', now(), interval ''1 minute'') = interval ''1 minute'''),
  ('function pgsentinel_samples_in(timestamp with time zone, timestamp with time zone, text)',
   'SELECT count(*) > 0 FROM %1$I.pgsentinel_samples_in()'),
  ('function pgsentinel_window_pieces(timestamp with time zone, timestamp with time zone, text, text)',
   'SELECT count(*) > 0 FROM %1$I.pgsentinel_window_pieces(now() - interval ''3 hours'', now(), ''hour'')'),
  ('function pgsentinel_load(timestamp with time zone, timestamp with time zone, text, text, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_load(now() - interval ''3 hours'', now(), ''hour'', ''session'')'),
  ('function pgsentinel_observed(timestamp with time zone, timestamp with time zone, text, text)',
   'SELECT count(*) > 0 FROM %1$I.pgsentinel_observed(now() - interval ''3 hours'', now(), ''hour'')'),
  ('function pgsentinel_top(timestamp with time zone, timestamp with time zone, text, integer, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_top(dimension => ''session'')'),
  ('function pgsentinel_top_statements(timestamp with time zone, timestamp with time zone, integer, text, text, text, text, text, bigint, text, text, integer, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_top_statements()'),
  ('function pgsentinel_statement_calls_in(timestamp with time zone, timestamp with time zone, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_statement_calls_in(pg_catalog.now() OPERATOR(pg_catalog.-) ''1 hour''::pg_catalog.interval, pg_catalog.now(), NULL::pg_catalog.text)'),
  ('function pgsentinel_top_calls(timestamp with time zone, timestamp with time zone, integer, text, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_top_calls(by => ''calls''::pg_catalog.text)'),
  ('function pgsentinel_wait_classes()',
   'SELECT count(*) = 11 FROM %1$I.pgsentinel_wait_classes()'),
  ('function pgsentinel_check_request(timestamp with time zone, timestamp with time zone, integer, integer, text, text, text, text, text, integer)',
   'SELECT %1$I.pgsentinel_check_request(now() - interval ''1 hour'', now(), 10, 2, ''postgres''::text, NULL::text, ''Lock''::text, NULL::text, ''psql''::text, 80)'),
  ('function pgsentinel_lock_name(text, oid, text, text)',
   'SELECT %1$I.pgsentinel_lock_name(''tuple''::text, ''pg_catalog.pg_class''::pg_catalog.regclass::pg_catalog.oid, ''tuple (3,7)''::text, pg_catalog.current_database()::pg_catalog.text) OPERATOR(pg_catalog.=) ''tuple (3,7) of pg_catalog.pg_class'''),
  ('function pgsentinel_load_weight(text, double precision)',
   'SELECT %1$I.pgsentinel_load_weight(''active''::text, 2::float8) = 2::float8 AND %1$I.pgsentinel_load_weight(''idle in transaction''::text, 2::float8) = 0::float8'),
  ('function pgsentinel_incidents(timestamp with time zone, timestamp with time zone, double precision, integer, interval, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_incidents(now() - interval ''1 minute'', now())'),
  ('function pgsentinel_check_incidents(double precision, integer, interval)',
   'SELECT %1$I.pgsentinel_check_incidents(1::float8, 3, ''10 s''::interval)'),
  ('function pgsentinel_unusual(timestamp with time zone, integer, double precision, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_unusual(now())'),
  ('function pgsentinel_unusual_keys(timestamp with time zone, integer, double precision, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_unusual_keys(now(), 4, 0.1::float8, NULL::text)'),
  ('function pgsentinel_check_unusual(timestamp with time zone, integer, double precision)',
   'SELECT %1$I.pgsentinel_check_unusual(now(), 4, 0.1::float8)'),
  ('function pgsentinel_own_worker(text)',
   'SELECT %1$I.pgsentinel_own_worker(''pgsentinel archiver''::text) AND NOT %1$I.pgsentinel_own_worker(NULL::text)'),
  ('function pgsentinel_html_stack(jsonb, double precision, integer, text, text)',
   'SELECT h LIKE ''%%data-class="&lt;img src=x onerror=&quot;y&quot;&gt;"%%'' AND h NOT LIKE ''%%<img%%''
      FROM %1$I.pgsentinel_html_stack(''[{"b": "2020-01-01 10:00+00", "cls": "<img src=x onerror=\"y\">", "ord": 1, "colour": "#000", "aas": 1, "cov": 1},
                                         {"b": "2020-01-01 10:01+00", "cls": "<img src=x onerror=\"y\">", "ord": 1, "colour": "#000", "aas": 2, "cov": 1}]''::jsonb,
                                      120::float8, 2, ''1 minute''::text, ''chart''::text) AS h'),
  ('function pgsentinel_html_trees(jsonb)',
   'SELECT %1$I.pgsentinel_html_trees(''[{"root_pid": 1, "depth": 0, "pid": 1}, {"root_pid": 1, "depth": 1, "pid": 2, "blocked_by": [1]}]''::jsonb)->1->>''tree'' = ''`-- 2'''),
  ('function pgsentinel_window_seconds(timestamp with time zone, timestamp with time zone)',
   'SELECT %1$I.pgsentinel_window_seconds(now() - interval ''1 minute'', now()) = 60::float8'),
  -- the handler runs when the ring is read, above
  ('function pgsentinel_fdw_handler()', NULL),
  ('function pgsentinel_fdw_validator(text[], oid)',
   'SELECT count(*) = 1 FROM (SELECT %1$I.pgsentinel_fdw_validator(''{}''::text[], ''pg_foreign_table''::regclass::oid)) v'),
  ('foreign-data wrapper pgsentinel_fdw', NULL),
  ('server pgsentinel_server', NULL),
  ('function pgsentinel_samples()',
   'SELECT count(*) > 0 FROM %1$I.pgsentinel_samples()'),
  ('function pgsentinel_history_id()',
   'SELECT %1$I.pgsentinel_history_id() IS NOT NULL'),
  ('function pgsentinel_in_transaction_block()',
   'SELECT %1$I.pgsentinel_in_transaction_block() IS NOT NULL'),
  ('function pgsentinel_ring_start()',
   'SELECT %1$I.pgsentinel_ring_start() IS NOT NULL'),
  -- the archive: the archiver writes it meanwhile (with its own
  -- search_path), the views read it and the ring
  ('relation pgsentinel_archive_state',
   'SELECT count(*) = 1 FROM %1$I.pgsentinel_archive_state'),
  ('relation pgsentinel_archive_wait_event',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_wait_event'),
  ('relation pgsentinel_archive_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_batch'),
  ('relation pgsentinel_archive_session',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_session'),
  ('relation pgsentinel_archive_text',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_text'),
  ('relation pgsentinel_rollup_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_minute'),
  ('relation pgsentinel_rollup_minute_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_minute_batch'),
  ('relation pgsentinel_rollup_minute_observed',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_minute_observed'),
  ('relation pgsentinel_ash_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ash_minute WHERE db_time OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_ash_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ash_hour WHERE db_time OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_ash_session_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ash_session_hour WHERE db_time OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_rollup_session_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_session_hour'),
  ('relation pgsentinel_blocking_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_blocking_hour WHERE db_time OPERATOR(pg_catalog.>=) 0'),
  ('relation pgsentinel_rollup_blocking_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_blocking_hour'),
  ('function pgsentinel_archive_partitioned()',
   'SELECT count(*) = 13 FROM %1$I.pgsentinel_archive_partitioned()'),
  ('function pgsentinel_archive_partitions_to_make(date, oid)',
   'SELECT count(*) > 0 FROM %1$I.pgsentinel_archive_partitions_to_make(pg_catalog.now()::date OPERATOR(pg_catalog.-) 3, %1$L::regnamespace::oid)'),
  ('function pgsentinel_archive_partitions_expired(date, date, date, oid)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_partitions_expired(pg_catalog.now()::date, pg_catalog.now()::date, pg_catalog.now()::date, %1$L::regnamespace::oid)'),
  ('function pgsentinel_archive_step_sql()',
   'SELECT %1$I.pgsentinel_archive_step_sql() IS NOT NULL'),
  ('function pgsentinel_archive_statements_step_sql()',
   'SELECT %1$I.pgsentinel_archive_statements_step_sql() IS NOT NULL'),
  ('function pgsentinel_text_split(text)',
   'SELECT %1$I.pgsentinel_text_split(''SELECT 1'') OPERATOR(pg_catalog.=) ARRAY[E''SELECT \x01'', ''1'']'),
  ('function pgsentinel_pack(bigint[])',
   'SELECT %1$I.pgsentinel_unpack(%1$I.pgsentinel_pack(''{5,NULL,-3}''::pg_catalog.int8[]))::pg_catalog.text OPERATOR(pg_catalog.=) ''{5,NULL,-3}'''),
  ('function pgsentinel_pack(integer[])',
   'SELECT %1$I.pgsentinel_unpack(%1$I.pgsentinel_pack(''{1,2}''::pg_catalog.int4[]))::pg_catalog.text OPERATOR(pg_catalog.=) ''{1,2}'''),
  ('function pgsentinel_pack(xid[])',
   'SELECT %1$I.pgsentinel_unpack(%1$I.pgsentinel_pack(''{4294967295}''::pg_catalog.xid[]))::pg_catalog.text OPERATOR(pg_catalog.=) ''{4294967295}'''),
  ('function pgsentinel_unpack(bytea)',
   'SELECT %1$I.pgsentinel_unpack(''\x01''::pg_catalog.bytea)::pg_catalog.text OPERATOR(pg_catalog.=) ''{}'''),
  ('function pgsentinel_sample_pack(bigint[], bigint[], double precision[], double precision[], integer[], boolean[])',
   'SELECT %1$I.pgsentinel_sample_pack(''{7}''::pg_catalog.int8[], ''{0}''::pg_catalog.int8[], ''{1}''::pg_catalog.float8[], ''{1}''::pg_catalog.float8[], ''{3}''::pg_catalog.int4[], ''{f}''::pg_catalog.bool[]) IS NOT NULL'),
  ('function pgsentinel_batch_samples(bytea)',
   'SELECT (%1$I.pgsentinel_batch_samples(%1$I.pgsentinel_sample_pack(''{7}''::pg_catalog.int8[], ''{0}''::pg_catalog.int8[], ''{1}''::pg_catalog.float8[], ''{1}''::pg_catalog.float8[], ''{3}''::pg_catalog.int4[], ''{f}''::pg_catalog.bool[]))).active_sessions::pg_catalog.text OPERATOR(pg_catalog.=) ''{3}'''),
  ('function pgsentinel_rollup_minute_rows(bytea)',
   'SELECT count(*) OPERATOR(pg_catalog.=) 1 FROM %1$I.pgsentinel_rollup_minute_rows(%1$I.pgsentinel_minute_pack(''{d}''::pg_catalog.text[], ''{10}''::pg_catalog.oid[], ''{u}''::pg_catalog.text[], ''{a}''::pg_catalog.text[], ''{client backend}''::pg_catalog.text[], ''{CPU}''::pg_catalog.text[], ''{CPU}''::pg_catalog.text[], ''{1}''::pg_catalog.int8[], ''{1}''::pg_catalog.float8[], ''{1}''::pg_catalog.int8[]))'),
  ('function pgsentinel_minute_pack(text[], oid[], text[], text[], text[], text[], text[], bigint[], double precision[], bigint[])',
   'SELECT %1$I.pgsentinel_minute_pack(''{d}''::pg_catalog.text[], ''{10}''::pg_catalog.oid[], ''{u}''::pg_catalog.text[], ''{a}''::pg_catalog.text[], ''{client backend}''::pg_catalog.text[], ''{CPU}''::pg_catalog.text[], ''{CPU}''::pg_catalog.text[], ''{1}''::pg_catalog.int8[], ''{1}''::pg_catalog.float8[], ''{1}''::pg_catalog.int8[]) IS NOT NULL'),
  ('function pgsentinel_rollup_session_minute_rows(bytea)',
   'SELECT count(*) OPERATOR(pg_catalog.=) 1 FROM %1$I.pgsentinel_rollup_session_minute_rows(%1$I.pgsentinel_session_minute_pack(''{1}''::pg_catalog.int4[], ''{d}''::pg_catalog.text[], ''{10}''::pg_catalog.oid[], ''{u}''::pg_catalog.text[], ''{a}''::pg_catalog.text[], ''{c}''::pg_catalog.text[], ''{client backend}''::pg_catalog.text[], ''{CPU}''::pg_catalog.text[], ''{CPU}''::pg_catalog.text[], ''{1}''::pg_catalog.float8[], ''{1}''::pg_catalog.int8[], ARRAY[pg_catalog.now()]))'),
  ('function pgsentinel_session_minute_pack(integer[], text[], oid[], text[], text[], text[], text[], text[], text[], double precision[], bigint[], timestamp with time zone[])',
   'SELECT %1$I.pgsentinel_session_minute_pack(''{1}''::pg_catalog.int4[], ''{d}''::pg_catalog.text[], ''{10}''::pg_catalog.oid[], ''{u}''::pg_catalog.text[], ''{a}''::pg_catalog.text[], ''{c}''::pg_catalog.text[], ''{client backend}''::pg_catalog.text[], ''{CPU}''::pg_catalog.text[], ''{CPU}''::pg_catalog.text[], ''{1}''::pg_catalog.float8[], ''{1}''::pg_catalog.int8[], ARRAY[pg_catalog.now()]) IS NOT NULL'),
  ('function pgsentinel_rollup_blocking_minute_rows(bytea)',
   'SELECT pg_catalog.array_length(x.blocked_by, 1) OPERATOR(pg_catalog.=) 2 FROM %1$I.pgsentinel_rollup_blocking_minute_rows(%1$I.pgsentinel_blocking_minute_pack(''{w}''::pg_catalog."char"[], ''{1}''::pg_catalog.int4[], ''{2}''::pg_catalog.int4[], ''{10}''::pg_catalog.oid[], ''{1}''::pg_catalog.int4[], ''{"{1,3}"}''::pg_catalog.text[], ''{1}''::pg_catalog.int8[], ''{1}''::pg_catalog.float8[], ARRAY[pg_catalog.now()], ''{10}''::pg_catalog.oid[], ''{u}''::pg_catalog.text[], ''{active}''::pg_catalog.text[], ''{Lock}''::pg_catalog.text[], ''{tuple}''::pg_catalog.text[], ''{q}''::pg_catalog.text[], ARRAY[pg_catalog.now()], ''{a}''::pg_catalog.text[], ''{c}''::pg_catalog.text[], ARRAY[pg_catalog.now()], ''{l}''::pg_catalog.text[], ''{m}''::pg_catalog.text[], ''{h}''::pg_catalog.text[])) x'),
  ('function pgsentinel_blocking_minute_pack("char"[], integer[], integer[], oid[], integer[], text[], bigint[], double precision[], timestamp with time zone[], oid[], text[], text[], text[], text[], text[], timestamp with time zone[], text[], text[], timestamp with time zone[], text[], text[], text[])',
   'SELECT %1$I.pgsentinel_blocking_minute_pack(''{w}''::pg_catalog."char"[], ''{1}''::pg_catalog.int4[], ''{2}''::pg_catalog.int4[], ''{10}''::pg_catalog.oid[], ''{1}''::pg_catalog.int4[], ''{"{1,3}"}''::pg_catalog.text[], ''{1}''::pg_catalog.int8[], ''{1}''::pg_catalog.float8[], ARRAY[pg_catalog.now()], ''{10}''::pg_catalog.oid[], ''{u}''::pg_catalog.text[], ''{active}''::pg_catalog.text[], ''{Lock}''::pg_catalog.text[], ''{tuple}''::pg_catalog.text[], ''{q}''::pg_catalog.text[], ARRAY[pg_catalog.now()], ''{a}''::pg_catalog.text[], ''{c}''::pg_catalog.text[], ARRAY[pg_catalog.now()], ''{l}''::pg_catalog.text[], ''{m}''::pg_catalog.text[], ''{h}''::pg_catalog.text[]) IS NOT NULL'),
  ('function pgsentinel_statement_rows(timestamp with time zone, bytea)',
   'SELECT x.calls OPERATOR(pg_catalog.=) 3 AND x.exec_ms OPERATOR(pg_catalog.=) 1.5 FROM %1$I.pgsentinel_statement_rows(pg_catalog.now(), %1$I.pgsentinel_statement_batch_pack(%1$I.pgsentinel_pack(''{0}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1000000}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{7}''::pg_catalog.int8[]), ''{42}''::pg_catalog.int8[], %1$I.pgsentinel_pack(''{3}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{3}''::pg_catalog.int8[]), ''{1.5}''::pg_catalog.float8[], %1$I.pgsentinel_pack(''{NULL}''::pg_catalog.int8[]), ''{NULL}''::pg_catalog.float8[], %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), ''{10}''::pg_catalog.oid[], ''{1}''::pg_catalog.oid[], ''{t}''::pg_catalog.bool[], ''{f}''::pg_catalog.bool[])) x'),
  ('function pgsentinel_statement_batch_pack(bytea, bytea, bytea, bigint[], bytea, bytea, double precision[], bytea, double precision[], bytea, bytea, bytea, bytea, bytea, bytea, bytea, oid[], oid[], boolean[], boolean[])',
   'SELECT %1$I.pgsentinel_batch_format(%1$I.pgsentinel_statement_batch_pack(%1$I.pgsentinel_pack(''{0}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1000000}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{7}''::pg_catalog.int8[]), ''{42}''::pg_catalog.int8[], %1$I.pgsentinel_pack(''{3}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{3}''::pg_catalog.int8[]), ''{1.5}''::pg_catalog.float8[], %1$I.pgsentinel_pack(''{NULL}''::pg_catalog.int8[]), ''{NULL}''::pg_catalog.float8[], %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), ''{10}''::pg_catalog.oid[], ''{1}''::pg_catalog.oid[], ''{t}''::pg_catalog.bool[], ''{f}''::pg_catalog.bool[]), NULL::pg_catalog.text) OPERATOR(pg_catalog.=) 1'),
  ('function pgsentinel_statement_batch_keep(timestamp with time zone, bytea, timestamp with time zone)',
   'SELECT count(*) OPERATOR(pg_catalog.=) 0 FROM %1$I.pgsentinel_statement_rows(pg_catalog.now(), %1$I.pgsentinel_statement_batch_keep(pg_catalog.now(), %1$I.pgsentinel_statement_batch_pack(%1$I.pgsentinel_pack(''{0}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1000000}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{7}''::pg_catalog.int8[]), ''{42}''::pg_catalog.int8[], %1$I.pgsentinel_pack(''{3}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{3}''::pg_catalog.int8[]), ''{1.5}''::pg_catalog.float8[], %1$I.pgsentinel_pack(''{NULL}''::pg_catalog.int8[]), ''{NULL}''::pg_catalog.float8[], %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int8[]), ''{10}''::pg_catalog.oid[], ''{1}''::pg_catalog.oid[], ''{t}''::pg_catalog.bool[], ''{f}''::pg_catalog.bool[]), pg_catalog.now())) x'),
  ('function pgsentinel_us_between(timestamp with time zone, timestamp with time zone)',
   'SELECT %1$I.pgsentinel_us_between(''2020-01-01 00:00+00''::pg_catalog.timestamptz, ''2020-01-01 00:00:01.5+00''::pg_catalog.timestamptz) OPERATOR(pg_catalog.=) 1500000'),
  ('function pgsentinel_us_after(timestamp with time zone, bigint)',
   'SELECT %1$I.pgsentinel_us_after(''2020-01-01 00:00+00''::pg_catalog.timestamptz, 1500000::pg_catalog.int8) OPERATOR(pg_catalog.=) ''2020-01-01 00:00:01.5+00''::pg_catalog.timestamptz'),
  ('function pgsentinel_batch_rows(timestamp with time zone, bigint[], bigint[], double precision[], double precision[], boolean[], bytea)',
   'SELECT count(*) OPERATOR(pg_catalog.=) 1 FROM %1$I.pgsentinel_batch_rows(''2020-01-01 00:00+00''::pg_catalog.timestamptz, ''{7}''::pg_catalog.int8[], ''{0}''::pg_catalog.int8[], ''{1}''::pg_catalog.float8[], ''{1}''::pg_catalog.float8[], ''{f}''::pg_catalog.bool[], %1$I.pgsentinel_batch_pack(%1$I.pgsentinel_pack(''{1}''::pg_catalog.int4[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int4[]), %1$I.pgsentinel_pack(''{1}''::pg_catalog.int4[]), ''{active}''::pg_catalog.text[], %1$I.pgsentinel_pack(''{0}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{0}''::pg_catalog.int8[]), %1$I.pgsentinel_pack(''{0}''::pg_catalog.int8[]), NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, %1$I.pgsentinel_pack(''{1}''::pg_catalog.int4[]), NULL::pg_catalog.text[], %1$I.pgsentinel_pack(''{1}''::pg_catalog.int4[]), NULL::pg_catalog.text[], ''{SELECT}''::pg_catalog.text[], ''{1}''::pg_catalog.int8[], ''{0}''::pg_catalog.int8[], NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.text[], NULL::pg_catalog.oid[], NULL::pg_catalog.text[])) x WHERE x.xact_start OPERATOR(pg_catalog.=) ''2020-01-01 00:00+00''::pg_catalog.timestamptz'),
  ('function pgsentinel_batch_pack(bytea, bytea, bytea, text[], bytea, bytea, bytea, bytea, bytea, bytea, text[], bytea, text[], text[], bigint[], bigint[], bytea, bytea, text[], oid[], text[], text[], oid[], text[], text[], text[], bytea)',
   'SELECT %1$I.pgsentinel_batch_format(%1$I.pgsentinel_batch_pack(NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, ''{active}''::pg_catalog.text[], NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.text[], NULL::pg_catalog.bytea, NULL::pg_catalog.text[], NULL::pg_catalog.text[], ''{1}''::pg_catalog.int8[], NULL::pg_catalog.int8[], NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.text[], ''{10}''::pg_catalog.oid[], NULL::pg_catalog.text[]), NULL::pg_catalog.text) OPERATOR(pg_catalog.=) 1'),
  ('function pgsentinel_batch_keep(bytea, integer[])',
   'SELECT count(*) OPERATOR(pg_catalog.=) 0 FROM %1$I.pgsentinel_batch_rows(''2020-01-01 00:00+00''::pg_catalog.timestamptz, ''{7}''::pg_catalog.int8[], ''{0}''::pg_catalog.int8[], ''{1}''::pg_catalog.float8[], ''{1}''::pg_catalog.float8[], ''{f}''::pg_catalog.bool[], %1$I.pgsentinel_batch_keep(%1$I.pgsentinel_batch_pack(%1$I.pgsentinel_pack(''{1}''::pg_catalog.int4[]), NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.text[], NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.text[], NULL::pg_catalog.bytea, NULL::pg_catalog.text[], NULL::pg_catalog.text[], NULL::pg_catalog.int8[], NULL::pg_catalog.int8[], NULL::pg_catalog.bytea, NULL::pg_catalog.bytea, NULL::pg_catalog.text[], NULL::pg_catalog.oid[], NULL::pg_catalog.text[]), ''{NULL}''::pg_catalog.int4[]))'),
  ('function pgsentinel_batch_format(bytea, text)',
   'SELECT %1$I.pgsentinel_batch_format(''\x01002b15000000000000000000000000000000000000000000000000000000000000000000000000000000000000''::pg_catalog.bytea, ''rows''::pg_catalog.text) OPERATOR(pg_catalog.=) 1'),
  ('function pgsentinel_statement_texts_in(bigint[], timestamp with time zone, timestamp with time zone, text, text, text)',
   'SELECT count(*) OPERATOR(pg_catalog.=) 0 FROM %1$I.pgsentinel_statement_texts_in(ARRAY[0]::pg_catalog.int8[], pg_catalog.now() OPERATOR(pg_catalog.-) interval ''1 hour'', pg_catalog.now(), NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.text)'),
  ('function pgsentinel_text_fill(text, text)',
   'SELECT %1$I.pgsentinel_text_fill(E''SELECT \x01'', ''1'') OPERATOR(pg_catalog.=) ''SELECT 1'''),
  ('relation pgsentinel_ambiguous_routines',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ambiguous_routines'),
  ('function pgsentinel_window_share(timestamp with time zone, timestamp with time zone, timestamp with time zone, timestamp with time zone)',
   'SELECT %1$I.pgsentinel_window_share(''2020-01-01 10:00''::pg_catalog.timestamptz, ''2020-01-01 10:01''::pg_catalog.timestamptz, ''2020-01-01 09:59:30''::pg_catalog.timestamptz, ''2020-01-01 10:00:30''::pg_catalog.timestamptz) OPERATOR(pg_catalog.=) 0.5::pg_catalog.float8'),
  ('function pgsentinel_text_line(text, integer)',
   'SELECT %1$I.pgsentinel_text_line(E''SELECT  a,\tb FROM tab'', 16) OPERATOR(pg_catalog.=) ''SELECT a, b ...'''),
  ('function pgsentinel_text_ids(date[], text[], integer)',
   'SELECT count(*) = 0 FROM %1$I.pgsentinel_text_ids(ARRAY[pg_catalog.now()::date], ARRAY[NULL::text])'),
  ('function pgsentinel_blocking_parts(jsonb, text)',
   'SELECT count(*) > 0 FROM %1$I.pgsentinel_blocking_parts(''[{"ash_time": "2020-01-01 10:00:00+00", "sample_id": 1, "pid": 2, "weight": 1, "usesysid": 10, "state": "active", "blocking": [3], "blockerpid": 3, "blocker_state": "idle", "blocker_usesysid": 10}]''::jsonb, ''minute'')'),
  ('relation pgsentinel_blocking_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_blocking_minute WHERE db_time OPERATOR(pg_catalog.>=) 0'),
  ('relation pgsentinel_rollup_blocking_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_blocking_minute'),
  ('relation pgsentinel_rollup_blocking_minute_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_blocking_minute_batch'),
  ('relation pgsentinel_ash_session_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ash_session_minute WHERE db_time OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_rollup_session_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_session_minute'),
  ('relation pgsentinel_rollup_session_minute_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_session_minute_batch'),
  ('relation pgsentinel_sample_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_sample_minute WHERE observed OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_sample_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_sample_hour WHERE observed OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_activity_archive',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_activity_archive WHERE top_level_query IS NOT NULL'),
  ('relation pgsentinel_history_split',
   'SELECT count(*) = 1 FROM %1$I.pgsentinel_history_split WHERE split_time IS NOT NULL'),
  ('relation pgsentinel_rollup_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_hour'),
  ('relation pgsentinel_rollup_hour_observed',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_rollup_hour_observed'),
  ('relation pgsentinel_archive_samples_by_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_samples_by_batch WHERE weight OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_archive_rows_by_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_rows_by_batch WHERE weight OPERATOR(pg_catalog.>) 0 AND batch_start IS NOT NULL'),
  ('relation pgsentinel_history_samples_by_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_history_samples_by_batch WHERE weight OPERATOR(pg_catalog.>) 0 AND batch_start IS NOT NULL'),
  ('relation pgsentinel_history_rows_by_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_history_rows_by_batch WHERE weight OPERATOR(pg_catalog.>=) 0 AND batch_end IS NOT NULL'),
  ('relation pgsentinel_sample_archive',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_sample_archive WHERE weight OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_sample_history',
   'SELECT count(*) > 0 FROM %1$I.pgsentinel_sample_history WHERE weight OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_ash_archive',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ash_archive WHERE weight OPERATOR(pg_catalog.>) 0 AND query IS NOT NULL'),
  ('relation pgsentinel_ash_history',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ash_history WHERE weight OPERATOR(pg_catalog.>) 0 AND query IS NOT NULL'),
  ('relation pgsentinel_archive_statement_delta',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_statement_delta'),
  ('relation pgsentinel_archive_statement_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_statement_batch'),
  ('relation pgsentinel_archive_statement_text',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_archive_statement_text'),
  ('relation pgsentinel_statements_archive',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_statements_archive WHERE seconds OPERATOR(pg_catalog.>) 0 AND query IS NOT NULL'),
  ('relation pgsentinel_statements_history',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_statements_history WHERE seconds OPERATOR(pg_catalog.>) 0 AND query IS NOT NULL');
-- the fleet (docs/fleet.md): this server pulls itself as "hostile", in
-- the order of the names (add, partitions, pull, the reports), and is
-- removed last; the publication needs wal_level = logical and the
-- redirect fires in subscriptions' apply workers only (t/030_fleet.pl)
INSERT INTO pgs_calls VALUES
  ('function pgsentinel_fleet_aas(timestamp with time zone, timestamp with time zone, interval, text)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_aas()'),
  ('function pgsentinel_fleet_add(text, text, text, integer, interval, interval, text)',
   'SELECT pgs_fleet_here() IS NULL OR (%1$I.pgsentinel_fleet_add(''hostile'', pgs_fleet_here(), ''pull'', pull_interval => ''1 hour''::interval) IS NOT NULL
                                        AND %1$I.pgsentinel_fleet_add(''hostile_node'', pgs_fleet_here(), ''pull'', pull_interval => ''1 hour''::interval, node => ''pgs_node'') IS NOT NULL)'),
  ('function pgsentinel_fleet_expire(integer, interval, interval, interval)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_expire((SELECT f.server_id FROM %1$I.pgsentinel_fleet_server f WHERE f.name OPERATOR(pg_catalog.=) ''hostile''), ''30 days''::interval, ''30 days''::interval, ''1827 days''::interval) OPERATOR(pg_catalog.=) 0'),
  ('function pgsentinel_fleet_expire_all()',
   'SELECT %1$I.pgsentinel_fleet_expire_all() IS NOT NULL'),
  ('function pgsentinel_fleet_check_schema()',
   'SELECT count(*) OPERATOR(pg_catalog.=) 1 FROM (SELECT %1$I.pgsentinel_fleet_check_schema()) x'),
  ('function pgsentinel_fleet_foreign_table(name, text)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_foreign_table((SELECT f.foreign_server FROM %1$I.pgsentinel_fleet_server f WHERE f.name OPERATOR(pg_catalog.=) ''hostile''), ''_samples''::pg_catalog.text) IS NOT NULL'),
  ('function pgsentinel_fleet_pull_failed(text, text)',
   'SELECT %1$I.pgsentinel_fleet_pull_failed(''no such server'', ''none'') OPERATOR(pg_catalog.=) 0'),
  ('function pgsentinel_schema_creators()',
   'SELECT %1$I.pgsentinel_schema_creators() OPERATOR(pg_catalog.=) ''{}''::pg_catalog.name[]'),
  ('function pgsentinel_fleet_newest_sample(integer, timestamp with time zone)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT %1$I.pgsentinel_fleet_newest_sample(f.server_id, ''infinity''::timestamptz) IS NOT DISTINCT FROM (SELECT pg_catalog.max(x.sample_time) FROM %1$I.pgsentinel_fleet_sample_archive x WHERE x.server_id OPERATOR(pg_catalog.=) f.server_id) FROM %1$I.pgsentinel_fleet_server f WHERE f.name OPERATOR(pg_catalog.=) ''hostile'')'),
  ('function pgsentinel_fleet_node_drop(integer, name)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) OPERATOR(pg_catalog.=) 1 FROM (SELECT %1$I.pgsentinel_fleet_node_drop(2147483647, ''pgs_node''::name)) d)'),
  ('function pgsentinel_fleet_node_keep(interval)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_node_keep(''2 minutes''::pg_catalog.interval) OPERATOR(pg_catalog.=) 1'),
  -- (made by pgsentinel_fleet_add(..., node => ...): its foreign partitions)
  ('function pgsentinel_fleet_node_place(integer, name, date)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) OPERATOR(pg_catalog.=) 14 FROM pg_catalog.pg_class c JOIN %1$I.pgsentinel_fleet_server f ON f.name OPERATOR(pg_catalog.=) ''hostile_node'' WHERE c.relkind OPERATOR(pg_catalog.=) ''f'' AND c.relname OPERATOR(pg_catalog.~) (''^pgsentinel_fleet_[a-z_]+_'' OPERATOR(pg_catalog.||) f.server_id OPERATOR(pg_catalog.||) ''$''))'),
  ('function pgsentinel_fleet_node_schema(name, integer)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_node_schema(''pgs_node''::name, NULL::integer) OPERATOR(pg_catalog.=) ''public''::name'),
  ('function pgsentinel_fleet_blocking_in(text, text, timestamp with time zone, timestamp with time zone)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_blocking_in(''hostile'', ''minute'', ''-infinity''::timestamptz, ''infinity''::timestamptz))'),
  ('function pgsentinel_fleet_conninfo(text)',
   'SELECT count(*) = 2 FROM %1$I.pgsentinel_fleet_conninfo(''host=h dbname=''''d b'''''')'),
  ('function pgsentinel_fleet_load_in(text, text, timestamp with time zone, timestamp with time zone, boolean)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_load_in(''hostile'', ''hour'', ''-infinity''::timestamptz, ''infinity''::timestamptz, true))'),
  ('function pgsentinel_fleet_needs(name)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_needs(''dblink''::name) IS NOT NULL'),
  ('function pgsentinel_fleet_observed_in(text, text, timestamp with time zone, timestamp with time zone)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_observed_in(''hostile'', ''minute'', ''-infinity''::timestamptz, ''infinity''::timestamptz))'),
  ('function pgsentinel_fleet_overview(timestamp with time zone, timestamp with time zone, integer)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) OPERATOR(pg_catalog.=) 2 FROM %1$I.pgsentinel_fleet_overview() o WHERE o.server OPERATOR(pg_catalog.~~) ''hostile%%'')'),
  ('function pgsentinel_fleet_overview_html(timestamp with time zone, timestamp with time zone, integer)',
   'SELECT %1$I.pgsentinel_fleet_overview_html() OPERATOR(pg_catalog.~~) ''<!DOCTYPE html>%%</html>'''),
  ('function pgsentinel_fleet_overview_sql()',
   'SELECT %1$I.pgsentinel_fleet_overview_sql() IS NOT NULL'),
  ('function pgsentinel_fleet_partitioned()',
   'SELECT count(*) = 14 FROM %1$I.pgsentinel_fleet_partitioned()'),
  ('function pgsentinel_fleet_partitions(integer, date, date)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_partitions((SELECT f.server_id FROM %1$I.pgsentinel_fleet_server f WHERE f.name OPERATOR(pg_catalog.=) ''hostile''), pg_catalog.now()::date, pg_catalog.now()::date) IS NOT NULL'),
  ('function pgsentinel_fleet_publish()',
   'SELECT pg_catalog.current_setting(''wal_level'') OPERATOR(pg_catalog.<>) ''logical'' OR %1$I.pgsentinel_fleet_publish() IS NOT NULL'),
  ('function pgsentinel_fleet_pull(text)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) = 1 FROM %1$I.pgsentinel_fleet_pull(''hostile''))'),
  ('function pgsentinel_fleet_pull_sql()',
   'SELECT %1$I.pgsentinel_fleet_pull_sql() IS NOT NULL'),
  ('function pgsentinel_fleet_pull_statements_sql()',
   'SELECT %1$I.pgsentinel_fleet_pull_statements_sql() IS NOT NULL'),
  ('function pgsentinel_fleet_redirect()', NULL),
  ('function pgsentinel_refuse_overloads()', NULL),
  ('event trigger pgsentinel_refuse_overloads', NULL),
  ('function pgsentinel_fleet_refuse()', NULL),
  ('function pgsentinel_fleet_roll(text)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) = 1 FROM %1$I.pgsentinel_fleet_roll(''hostile'') WHERE rolled_until IS NOT NULL)'),
  ('function pgsentinel_fleet_roll_sql()',
   'SELECT %1$I.pgsentinel_fleet_roll_sql() IS NOT NULL'),
  ('function pgsentinel_fleet_rolled_until(text)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_rolled_until(''hostile'') IS NOT NULL'),
  ('function pgsentinel_fleet_rows(text, timestamp with time zone, timestamp with time zone)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rows(''hostile'', ''-infinity''::timestamptz, ''infinity''::timestamptz))'),
  ('function pgsentinel_fleet_rows_sql()',
   'SELECT %1$I.pgsentinel_fleet_rows_sql() IS NOT NULL'),
  ('function pgsentinel_fleet_samples_in(text, timestamp with time zone, timestamp with time zone)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) >= 1 FROM %1$I.pgsentinel_fleet_samples_in(''hostile'', ''-infinity''::timestamptz, ''infinity''::timestamptz))'),
  ('function pgsentinel_fleet_statement_history_text(text, bigint, timestamp with time zone, timestamp with time zone)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_statement_history_text(''hostile'', 1::pg_catalog.int8, ''-infinity''::timestamptz, ''infinity''::timestamptz) IS NULL'),
  ('function pgsentinel_fleet_statements_in(text, timestamp with time zone, timestamp with time zone, boolean)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_statements_in(''hostile'', ''-infinity''::timestamptz, ''infinity''::timestamptz))'),
  ('function pgsentinel_fleet_server_id(text)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_server_id(''hostile'') IS NOT NULL'),
  ('function pgsentinel_fleet_statement_text(text, bigint, timestamp with time zone, timestamp with time zone, text, text, text)',
   'SELECT pgs_fleet_here() IS NULL OR %1$I.pgsentinel_fleet_statement_text(''hostile'', 0::pg_catalog.int8, ''-infinity''::timestamptz, ''infinity''::timestamptz, NULL, NULL, NULL) IS NULL'),
  ('function pgsentinel_fleet_tick()',
   'SELECT %1$I.pgsentinel_fleet_tick() IS NOT NULL'),
  ('function pgsentinel_fleet_top_servers(timestamp with time zone, timestamp with time zone, integer)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) >= 1 FROM %1$I.pgsentinel_fleet_top_servers())'),
  ('function pgsentinel_fleet_top_statements(timestamp with time zone, timestamp with time zone, text, integer)',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_top_statements() WHERE calls IS NULL OR ms_per_call IS NOT NULL'),
  ('relation pgsentinel_fleet_pending_drop',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_pending_drop'),
  ('relation pgsentinel_fleet_server',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_server'),
  ('relation pgsentinel_fleet_server_server_id_seq', NULL),
  ('relation pgsentinel_fleet_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_batch'),
  ('relation pgsentinel_fleet_session',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_session'),
  ('relation pgsentinel_fleet_text',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_text'),
  ('relation pgsentinel_fleet_wait_event',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_wait_event'),
  ('relation pgsentinel_fleet_statement_delta',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_statement_delta'),
  ('relation pgsentinel_fleet_statement_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_statement_batch'),
  ('relation pgsentinel_fleet_statement_text',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_statement_text'),
  ('relation pgsentinel_fleet_rollup_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_minute'),
  ('relation pgsentinel_fleet_rollup_minute_observed',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_minute_observed'),
  ('relation pgsentinel_fleet_rollup_session_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_session_minute'),
  ('relation pgsentinel_fleet_rollup_blocking_minute',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_blocking_minute'),
  ('relation pgsentinel_fleet_rollup_minute_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_minute_batch'),
  ('relation pgsentinel_fleet_rollup_session_minute_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_session_minute_batch'),
  ('relation pgsentinel_fleet_rollup_blocking_minute_batch',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_blocking_minute_batch'),
  ('relation pgsentinel_fleet_rollup_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_hour'),
  ('relation pgsentinel_fleet_rollup_hour_observed',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_hour_observed'),
  ('relation pgsentinel_fleet_rollup_session_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_session_hour'),
  ('relation pgsentinel_fleet_rollup_blocking_hour',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_rollup_blocking_hour'),
  -- (the fleet's whole rows, a node's through postgres_fdw: a few, so
  -- that a loaded machine's long run does not read them all)
  ('relation pgsentinel_fleet_activity_archive',
   'SELECT count(*) >= 0 FROM (SELECT FROM %1$I.pgsentinel_fleet_activity_archive WHERE top_level_query IS NOT NULL LIMIT 10) x'),
  ('relation pgsentinel_fleet_statements',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_statements WHERE seconds OPERATOR(pg_catalog.>) 0 AND query IS NOT NULL'),
  ('relation pgsentinel_fleet_status',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_status'),
  ('relation pgsentinel_fleet_sample_archive',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_fleet_sample_archive WHERE weight OPERATOR(pg_catalog.>) 0'),
  ('relation pgsentinel_fleet_ash',
   'SELECT count(*) >= 0 FROM (SELECT FROM %1$I.pgsentinel_fleet_ash WHERE weight OPERATOR(pg_catalog.>) 0 AND query IS NOT NULL LIMIT 10) x'),
  ('relation pgsentinel_ring_samples',
   'SELECT count(*) > 0 FROM %1$I.pgsentinel_ring_samples'),
  ('relation pgsentinel_ring_statements',
   'SELECT count(*) >= 0 FROM %1$I.pgsentinel_ring_statements WHERE seconds OPERATOR(pg_catalog.>) 0 AND query IS NOT NULL');
-- called after the others: it empties the history they read
INSERT INTO pgs_calls VALUES
  ('function pgsentinel_fleet_remove(text, boolean)',
   'SELECT pgs_fleet_here() IS NULL OR (SELECT count(*) = 2 FROM (SELECT %1$I.pgsentinel_fleet_remove(n, k) FROM (VALUES (''hostile'', false), (''hostile_node'', true)) v(n, k)) r)', true),
  ('function pgsentinel_reset()',
   'SELECT %1$I.pgsentinel_reset() IS NOT NULL', true);

-- The fleet's calls reach this server through dblink and postgres_fdw,
-- when they are installed (a PostgreSQL built without contrib has neither:
-- pgs_fleet_here() is then NULL and those calls are skipped).
CREATE SCHEMA pgs_fleet_ext;
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_available_extensions
        WHERE name IN ('dblink', 'postgres_fdw')) = 2 THEN
        CREATE EXTENSION dblink SCHEMA pgs_fleet_ext;
        CREATE EXTENSION postgres_fdw SCHEMA pgs_fleet_ext;
    END IF;
END $$;
CREATE FUNCTION pgs_fleet_here() RETURNS text LANGUAGE sql AS $$
  SELECT format('host=%s port=%s dbname=%s',
                split_part(current_setting('unix_socket_directories'), ',', 1),
                current_setting('port'), current_database())
   WHERE (SELECT count(*) FROM pg_extension
          WHERE extname IN ('dblink', 'postgres_fdw')) = 2
$$;
-- A repository node for the calls that place a server's partitions on
-- one: another database of this cluster with pgsentinel installed, made
-- afresh for each round of calls (through dblink: CREATE DATABASE cannot
-- run in a transaction block).  Its server is removed with its history
-- kept: the round's pulls into it hold locks there that a drop of its
-- partitions in the same transaction would wait for (t/031_fleet_nodes.pl
-- drops them).
CREATE FUNCTION pgs_node_fresh() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF pgs_fleet_here() IS NOT NULL THEN
        PERFORM pgs_fleet_ext.dblink_exec(pgs_fleet_here(), 'DROP DATABASE IF EXISTS pgs_node_db WITH (FORCE)');
        PERFORM pgs_fleet_ext.dblink_exec(pgs_fleet_here(), 'CREATE DATABASE pgs_node_db');
        PERFORM pgs_fleet_ext.dblink_exec(replace(pgs_fleet_here(), 'dbname=' || current_database(), 'dbname=pgs_node_db'),
                                          -- (untracked: its script's statements
                                          -- would crowd this test's out of
                                          -- pg_stat_statements)
                                          'SET pg_stat_statements.track = none; CREATE EXTENSION pgsentinel');
        IF NOT EXISTS (SELECT FROM pg_foreign_server WHERE srvname = 'pgs_node') THEN
            EXECUTE format('CREATE SERVER pgs_node FOREIGN DATA WRAPPER postgres_fdw
                              OPTIONS (host %L, port %L, dbname ''pgs_node_db'', connect_timeout ''10'')',
                           split_part(current_setting('unix_socket_directories'), ',', 1),
                           current_setting('port'));
            CREATE USER MAPPING FOR PUBLIC SERVER pgs_node;
        END IF;
    END IF;
END $$;

-- Calls them all with the installation schema first in the search_path (a
-- call must not resolve names then either), and says what each returned.
CREATE FUNCTION pgs_call_everything() RETURNS TABLE (member text, result text)
LANGUAGE plpgsql AS $$
DECLARE
    m record;
    ok boolean;
    s name := (SELECT n.nspname FROM pg_extension e
               JOIN pg_namespace n ON n.oid = e.extnamespace
               WHERE e.extname = 'pgsentinel');
BEGIN
    PERFORM pgs_node_fresh();
    FOR m IN SELECT p.member, c.call, c.member IS NULL AS missing
             FROM pgs_members p LEFT JOIN pgs_calls c ON c.member = p.member
             ORDER BY coalesce(c.last, false), p.member
    LOOP
        member := m.member;
        IF m.missing THEN
            result := 'NOT CALLED: add a call to pgs_calls in hostile_schema.sql';
        ELSIF m.call IS NULL THEN
            result := 'nothing to call';
        ELSE
            PERFORM set_config('search_path', s || ', public', true);
            EXECUTE pg_catalog.format(m.call, s) INTO ok;
            PERFORM set_config('search_path', 'public', true);
            result := CASE WHEN ok THEN 'ok' ELSE 'unexpected result' END;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

-- A statement with readings in the statements history, so that the
-- helpers have intervals to compute (wait for them, 300 s at most: the
-- statements worker's relaunch delay after the extension was dropped).
-- The window ends at the clock, not at now() (this transaction's start):
-- the reading that closes an interval may be of a later sample (a final
-- reading is asked for by the first sample that no longer sees the call,
-- and the statements worker rests between readings).
CREATE FUNCTION pgs_hostile_work() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(0.03);
    RETURN 1;
END $$;
CREATE FUNCTION pgs_hostile_wait() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '300 s';
    s name := (SELECT n.nspname FROM pg_extension e
               JOIN pg_namespace n ON n.oid = e.extnamespace
               WHERE e.extname = 'pgsentinel');
    found boolean;
BEGIN
    LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.pg_stat_statements_history_rates(
                            clock_timestamp() - interval ''1 hour'', clock_timestamp()))',
                       s) INTO found;
        EXIT WHEN found;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'no interval in the statements history within 300 s';
        END IF;
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;
SELECT 'SELECT pgs_hostile_work()' FROM generate_series(1, 5) \gexec
SELECT pgs_hostile_wait();

-- 1. A fresh installation into the attacker's schema (the full script of
-- the current version), everything called by a superuser.
DROP EXTENSION pgsentinel;
CREATE EXTENSION pgsentinel SCHEMA pgs_trap;
SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel';
-- The fleet runs as a superuser and looks its tables up by name when it
-- runs: it refuses a schema that another role may still create in, and
-- the status says so.  From here on the attacker's plants stay, made while
-- it could, but it creates no more (the schema is taken from it), as the
-- fleet requires; the squatting tests below give it back for a while.
-- (true where no fleet can be set up: a PostgreSQL without contrib)
CREATE FUNCTION pgs_refused_with(stmt text, state text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF pgs_fleet_here() IS NULL THEN
        RETURN true;
    END IF;
    EXECUTE stmt;
    RETURN false;
EXCEPTION WHEN OTHERS THEN
    IF SQLSTATE <> state THEN
        RAISE;
    END IF;
    RETURN true;
END $$;
SELECT pgs_refused_with($$SELECT pgs_trap.pgsentinel_fleet_add('hostile', pgs_fleet_here(), 'pull')$$,
                        '42501') AS writable_schema_refused,
       pgs_refused_with($$SELECT pgs_trap.pgsentinel_fleet_pull()$$, '42501') AS pull_refused,
       (SELECT diagnosis ~ '1 role\(s\) that are not superusers may create objects in the extension''s schema pgs_trap, such as regress_pgs_attacker'
          FROM pgs_trap.pgsentinel_status()) AS status_names_the_creator,
       pgs_trap.pgsentinel_schema_creators() AS creators;
ALTER SCHEMA pgs_trap OWNER TO CURRENT_USER;
GRANT USAGE ON SCHEMA pgs_trap TO regress_pgs_attacker;
SELECT pgs_trap.pgsentinel_schema_creators() AS creators;
SELECT * FROM pgs_call_everything();
SELECT * FROM pgs_bound_plants ORDER BY 1;
SELECT count(*) > 0 AS binds_pg_catalog_operators
FROM pgs_catalog_refs r JOIN pg_operator o ON o.oid = r.oid;
-- (the history again, after pgsentinel_reset())
SELECT 'SELECT pgs_hostile_work()' FROM generate_series(1, 5) \gexec
SELECT pgs_hostile_wait();

-- 2. 1.4.0 installed there, called, then updated from 1.0 step by step to
-- 2.0.0 and to the default version, called at each step.
DROP EXTENSION pgsentinel;
CREATE EXTENSION pgsentinel VERSION '1.4.0' SCHEMA pgs_trap;
SELECT * FROM pgs_call_everything();
UPDATE pg_extension SET extversion = '1.0' WHERE extname = 'pgsentinel';
ALTER EXTENSION pgsentinel UPDATE TO '2.0.0';
SELECT * FROM pgs_call_everything();
SELECT * FROM pgs_bound_plants ORDER BY 1;
ALTER EXTENSION pgsentinel UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel';
SELECT * FROM pgs_call_everything();
SELECT * FROM pgs_bound_plants ORDER BY 1;
SELECT 'SELECT pgs_hostile_work()' FROM generate_series(1, 5) \gexec
SELECT pgs_hostile_wait();

-- 3. A 2.0.0 installation made by the unqualified script of 2.0.0, which
-- bound the planted operators (rebuilt here as that script did, with the
-- search_path it had), is repaired by the update.
DROP EXTENSION pgsentinel;
CREATE EXTENSION pgsentinel VERSION '2.0.0' SCHEMA pgs_trap;
SET search_path = pgs_trap;
CREATE OR REPLACE FUNCTION pg_stat_statements_history_rates(
    since timestamptz DEFAULT now() - interval '1 hour',
    until timestamptz DEFAULT now())
RETURNS TABLE (
    ash_time timestamptz, sample_id bigint, userid oid, dbid oid,
    queryid bigint, toplevel boolean, seconds double precision,
    reset boolean, calls_per_s double precision, rows_per_s double precision,
    exec_ms_per_s double precision, ms_per_call double precision,
    rows_per_call double precision, plans_per_s double precision,
    shared_blks_hit_per_s double precision, shared_blks_read_per_s double precision,
    shared_blks_dirtied_per_s double precision, shared_blks_written_per_s double precision,
    temp_blks_read_per_s double precision, temp_blks_written_per_s double precision,
    wal_bytes_per_s double precision)
LANGUAGE sql STABLE
BEGIN ATOMIC
SELECT d.ash_time, d.sample_id, d.userid, d.dbid, d.queryid, d.toplevel,
       d.seconds, d.reset,
       d.calls / nullif(d.seconds, 0), d.rows / nullif(d.seconds, 0),
       d.exec_ms / nullif(d.seconds, 0), d.exec_ms / nullif(d.calls, 0),
       d.rows::double precision / nullif(d.calls, 0), d.plans / nullif(d.seconds, 0),
       d.shared_blks_hit / nullif(d.seconds, 0), d.shared_blks_read / nullif(d.seconds, 0),
       d.shared_blks_dirtied / nullif(d.seconds, 0), d.shared_blks_written / nullif(d.seconds, 0),
       d.temp_blks_read / nullif(d.seconds, 0), d.temp_blks_written / nullif(d.seconds, 0),
       d.wal_bytes::double precision / nullif(d.seconds, 0)
FROM pg_stat_statements_history_deltas(since, until) d;
END;
RESET search_path;
SELECT count(*) > 0 AS unqualified_2_0_0_binds_plants FROM pgs_bound_plants;
ALTER EXTENSION pgsentinel UPDATE;
SELECT * FROM pgs_bound_plants ORDER BY 1;
SELECT * FROM pgs_call_everything();

-- 4. What name resolution cannot close is named and refused (docs/security.md).
-- The attacker squats the names of today's texts partition and tomorrow's
-- samples partition (missing, as before the archiver's first pass) and of
-- the next fleet server's partition: the archiver refuses them, naming
-- them, and archives again once they are gone; the fleet refuses the
-- server.  Then the attacker plants an overload with a default of every
-- function name of ours (which makes our calls of that name ambiguous):
-- the status names them all and the fleet's setup is refused.  (Not
-- pgsentinel_status itself: its own call would be ambiguous, and its
-- error names it.)
CREATE TEMP TABLE pgs_own_names AS
SELECT DISTINCT p.proname FROM pgs_members m
  JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid;
GRANT SELECT ON pgs_own_names TO regress_pgs_attacker;
SELECT 'pgsentinel_archive_text_' || to_char(timezone('UTC', now())::date, 'YYYYMMDD') AS text_today,
       'pgsentinel_archive_batch_' || to_char(timezone('UTC', now())::date + 1, 'YYYYMMDD') AS sample_tomorrow,
       'pgsentinel_fleet_batch_' || CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS next_server
  FROM pgs_trap.pgsentinel_fleet_server_server_id_seq \gset
DROP TABLE pgs_trap.:"text_today", pgs_trap.:"sample_tomorrow";
ALTER SCHEMA pgs_trap OWNER TO regress_pgs_attacker;
SET ROLE regress_pgs_attacker;
CREATE VIEW pgs_trap.:"text_today" AS SELECT 1 AS x;
CREATE TABLE pgs_trap.:"sample_tomorrow" (x int);
CREATE TABLE pgs_trap.:"next_server" (server_id integer, sample_time timestamptz)
    PARTITION BY RANGE (sample_time);
RESET ROLE;
ALTER SCHEMA pgs_trap OWNER TO CURRENT_USER;
GRANT USAGE ON SCHEMA pgs_trap TO regress_pgs_attacker;
SELECT pg_terminate_backend(archive_worker_pid) AS restarted FROM pgs_trap.pgsentinel_status();
SELECT pgs_wait_for($$(SELECT archive_state = 'failing' AND archive_message ~ 'is in the way'
                       FROM pgs_trap.pgsentinel_status())$$);
SELECT regexp_replace(archive_message, '[0-9]{8}', 'YYYYMMDD') AS archive_message
  FROM pgs_trap.pgsentinel_status();
SELECT pgs_fleet_here() IS NULL
       OR NOT EXISTS (SELECT FROM pgs_trap.pgsentinel_fleet_status WHERE name = 'hostile')
       AS no_fleet_server_yet;
SELECT pgs_refused_with($$SELECT pgs_trap.pgsentinel_fleet_add('squatted', pgs_fleet_here(), 'pull')$$,
                        '42P07')
       AS squatted_server_refused;
SET ROLE regress_pgs_attacker;
DROP VIEW pgs_trap.:"text_today";
DROP TABLE pgs_trap.:"sample_tomorrow", pgs_trap.:"next_server";
RESET ROLE;
SELECT pgs_wait_for($$(SELECT archive_state = 'ok' FROM pgs_trap.pgsentinel_status())$$);
SELECT count(*) AS partitions_made_again FROM pg_class c
 WHERE c.relnamespace = 'pgs_trap'::regnamespace AND c.relispartition
   AND c.relname IN (:'text_today', :'sample_tomorrow');

-- A function named like one of ours and taking defaults would make our
-- calls of that name ambiguous (the archiver would stop, the reports
-- fail): pgsentinel's event trigger refuses each one the attacker tries,
-- and the archive goes on.
ALTER SCHEMA pgs_trap OWNER TO regress_pgs_attacker;
SELECT samples_archived AS archived_before FROM pgs_trap.pgsentinel_archive_state \gset
-- Nor is the schema renamed (the attacker could then make under the old
-- name what our bodies and workers name): refused to anyone.
ALTER SCHEMA pgs_trap RENAME TO pgs_trap_renamed;
SET ROLE regress_pgs_attacker;
DO $$
DECLARE
    f name;
    refused integer := 0;
    names integer := 0;
BEGIN
    FOR f IN SELECT n.proname FROM pgs_own_names n
    LOOP
        names := names + 1;
        BEGIN
            EXECUTE format('CREATE FUNCTION pgs_trap.%I(pgs_planted_default integer DEFAULT 0) RETURNS void
                            LANGUAGE plpgsql AS $f$BEGIN PERFORM pgs_trap.gotcha(%L); END$f$',
                           f, f || ' with a default');
        EXCEPTION WHEN duplicate_function THEN
            refused := refused + 1;
        END;
    END LOOP;
    PERFORM set_config('pgs_test.refused', refused || ' of ' || names, false);
    BEGIN
        CREATE FUNCTION pgs_trap.pgs_renamed(pgs_planted_default integer DEFAULT 0) RETURNS void
        LANGUAGE sql AS '';
        ALTER FUNCTION pgs_trap.pgs_renamed(integer) RENAME TO pgsentinel_history_id;
    EXCEPTION WHEN duplicate_function THEN
        PERFORM set_config('pgs_test.renamed', SQLERRM, false);
    END;
END $$;
RESET ROLE;
SELECT current_setting('pgs_test.refused') AS defaulted_overloads_refused,
       current_setting('pgs_test.renamed') AS renamed_refused,
       (SELECT count(*) FROM pg_proc p
         WHERE p.pronamespace = 'pgs_trap'::regnamespace
           AND p.proargnames = ARRAY['pgs_planted_default']) AS planted;
SELECT pgs_wait_for(format('(SELECT samples_archived > %s FROM pgs_trap.pgsentinel_archive_state)',
                           :archived_before));
-- (today's rows archived before the squatting test above dropped today's
-- text partition name texts that are gone or were stored again under other
-- ids: the report warns that their text does not match its template, as it
-- does for any damaged archive row, and reads it as NULL)
BEGIN;
SET LOCAL client_min_messages = error;
SELECT pgs_trap.pgsentinel_report(now() - interval '1 hour', now(), 'text'::text, NULL::integer,
                                  10, NULL::text, NULL::text) ~ 'pgsentinel' AS report_answers;
COMMIT;
-- Only a superuser can disable the event trigger; what a role makes
-- meanwhile is named by pgsentinel_status() and refused by the fleet.
ALTER EVENT TRIGGER pgsentinel_refuse_overloads DISABLE;
SET ROLE regress_pgs_attacker;
DO $$
DECLARE
    f name;
BEGIN
    FOR f IN SELECT n.proname FROM pgs_own_names n WHERE n.proname <> 'pgsentinel_status'
    LOOP
        EXECUTE format('CREATE FUNCTION pgs_trap.%I(pgs_planted_default integer DEFAULT 0) RETURNS void
                        LANGUAGE plpgsql AS $f$BEGIN PERFORM pgs_trap.gotcha(%L); END$f$',
                       f, f || ' with a default');
    END LOOP;
END $$;
RESET ROLE;
ALTER SCHEMA pgs_trap OWNER TO CURRENT_USER;
GRANT USAGE ON SCHEMA pgs_trap TO regress_pgs_attacker;
SELECT (SELECT count(*) FROM pg_proc p
         WHERE p.pronamespace = 'pgs_trap'::regnamespace
           AND p.proargnames = ARRAY['pgs_planted_default'])
       = (SELECT count(*) - 1 FROM pgs_own_names) AS every_name_planted,
       substring((SELECT diagnosis FROM pgs_trap.pgsentinel_status())
                 FROM '; ([0-9]+) function\(s\) in the extension''s schema are named like')::int
       = (SELECT count(*) FROM pg_proc p
           WHERE p.pronamespace = 'pgs_trap'::regnamespace
             AND p.proname IN (SELECT n.proname FROM pgs_own_names n)
             AND p.oid NOT IN (SELECT m.objid FROM pgs_members m
                                WHERE m.classid = 'pg_proc'::regclass))
         AS the_status_counts_every_plant;
SELECT pgs_refused_with($$SELECT pgs_trap.pgsentinel_fleet_add('overloaded', pgs_fleet_here(), 'pull')$$,
                        '55000')
       AS overloaded_schema_refused;
SET ROLE regress_pgs_attacker;
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid FROM pg_proc p
              WHERE p.pronamespace = 'pgs_trap'::regnamespace
                AND p.proargnames = ARRAY['pgs_planted_default']
    LOOP
        EXECUTE format('DROP FUNCTION %s', f);
    END LOOP;
END $$;
RESET ROLE;
ALTER EVENT TRIGGER pgsentinel_refuse_overloads ENABLE;
-- The archiver names our functions and tables in this schema, as a
-- superuser: had pgsentinel been dropped between its finding the schema
-- and a call, a plant would be chosen.  Each of its transactions holds
-- the extension locked (DROP EXTENSION waits for it): seen here while it
-- waits for the archive's state.
BEGIN;
LOCK TABLE pgs_trap.pgsentinel_archive_state IN EXCLUSIVE MODE;
SELECT pgs_wait_for($$EXISTS (
    SELECT FROM pg_stat_activity a
      JOIN pg_locks w ON w.pid = a.pid AND NOT w.granted
       AND w.relation = 'pgs_trap.pgsentinel_archive_state'::regclass
      JOIN pg_locks e ON e.pid = a.pid AND e.granted AND e.locktype = 'object'
       AND e.classid = 'pg_extension'::regclass AND e.mode = 'AccessShareLock'
       AND e.objid = (SELECT x.oid FROM pg_extension x WHERE x.extname = 'pgsentinel')
     WHERE a.backend_type = 'pgsentinel archiver')$$) AS archiver_holds_the_extension;
ROLLBACK;
-- An installation (or update) among such a function is refused, naming
-- it.  (A plant of a name the installation itself calls makes that call
-- fail as ambiguous; this one is called by users only.)
DROP EXTENSION pgsentinel;
ALTER SCHEMA pgs_trap OWNER TO regress_pgs_attacker;
SET ROLE regress_pgs_attacker;
CREATE FUNCTION pgs_trap.pgsentinel_report(pgs_planted_default integer DEFAULT 0) RETURNS text
LANGUAGE plpgsql AS $f$BEGIN PERFORM pgs_trap.gotcha('pgsentinel_report with a default'); RETURN ''; END$f$;
RESET ROLE;
ALTER SCHEMA pgs_trap OWNER TO CURRENT_USER;
GRANT USAGE ON SCHEMA pgs_trap TO regress_pgs_attacker;
-- (PostgreSQL 18 adds the script's statement to the error's context)
\set SHOW_CONTEXT never
CREATE EXTENSION pgsentinel SCHEMA pgs_trap;
\set SHOW_CONTEXT errors
DROP FUNCTION pgs_trap.pgsentinel_report(integer);
CREATE EXTENSION pgsentinel SCHEMA pgs_trap;
SELECT * FROM pgs_call_everything() WHERE result NOT IN ('ok', 'nothing to call');

-- Nothing planted ever ran, and the attacker is still no superuser.
SELECT planted, run_by FROM pgs_trap.gotcha ORDER BY planted;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_pgs_attacker';

-- Back to the normal installation for the next tests.
DROP EXTENSION pgsentinel;
SET client_min_messages = warning;
DROP SCHEMA pgs_trap CASCADE;
RESET client_min_messages;
DROP TABLE pgs_names, pgs_types, pgs_own, pgs_own_plants, pgs_own_names;
DROP ROLE regress_pgs_attacker;
DROP FUNCTION pgs_call_everything(), pgs_hostile_work(), pgs_hostile_wait(), pgs_node_fresh();
DO $$
BEGIN
    IF pgs_fleet_here() IS NOT NULL THEN
        PERFORM pgs_fleet_ext.dblink_exec(pgs_fleet_here(), 'DROP DATABASE pgs_node_db WITH (FORCE)');
    END IF;
END $$;
DROP FUNCTION pgs_fleet_here(), pgs_refused_with(text, text);
SET client_min_messages = warning;
DROP SCHEMA pgs_fleet_ext CASCADE;
RESET client_min_messages;
CREATE EXTENSION pgsentinel;
