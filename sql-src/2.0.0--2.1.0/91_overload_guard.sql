
-- The event trigger that refuses, once pgsentinel is installed, what the
-- check above refuses at installation: a function, procedure or aggregate
-- that is not pgsentinel's, in pgsentinel's schema, named like one of its
-- functions and taking defaults.  Such a routine makes pgsentinel's calls
-- of that name ambiguous (the archiver stops, the reports fail), and a
-- role with CREATE on the schema could make one at any time
-- (docs/security.md).  It fires on the commands that make or move a
-- routine, and on ALTER EXTENSION (pgsentinel moved to another schema,
-- among routines already there).  Only a superuser can disable it, and
-- pgsentinel_status() still names such a routine made meanwhile.
CREATE FUNCTION pgsentinel_refuse_overloads()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c record;
    found text;
BEGIN
    FOR c IN SELECT d.classid, d.objid FROM pg_event_trigger_ddl_commands() d
              WHERE d.classid IN ('pg_proc'::regclass, 'pg_extension'::regclass)
    LOOP
        SELECT pg_describe_object('pg_proc'::regclass, p.oid, 0) INTO found
          FROM pg_extension e
          JOIN pg_proc p ON p.pronamespace = e.extnamespace
         WHERE e.extname = 'pgsentinel'
           AND CASE WHEN c.classid = 'pg_proc'::regclass THEN p.oid = c.objid
                    ELSE c.objid = e.oid END
           AND p.pronargdefaults > 0
           AND p.proname IN (SELECT m.proname
                               FROM pg_depend d JOIN pg_proc m ON m.oid = d.objid
                              WHERE d.classid = 'pg_proc'::regclass
                                AND d.refclassid = 'pg_extension'::regclass
                                AND d.refobjid = e.oid AND d.deptype = 'e')
           AND NOT EXISTS (SELECT FROM pg_depend d
                            WHERE d.classid = 'pg_proc'::regclass
                              AND d.objid = p.oid
                              AND d.refclassid = 'pg_extension'::regclass
                              AND d.deptype = 'e')
         ORDER BY 1 LIMIT 1;
        IF found IS NOT NULL THEN
            RAISE EXCEPTION '% would make pgsentinel''s calls of that name ambiguous',
                            found
                USING ERRCODE = 'duplicate_function',
                      DETAIL = 'It is named like a function of pgsentinel and takes defaults: a call of pgsentinel''s function could then mean either.',
                      HINT = 'Give it another name or create it in another schema; see docs/security.md.';
        END IF;
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_refuse_overloads() FROM PUBLIC;

CREATE EVENT TRIGGER pgsentinel_refuse_overloads ON ddl_command_end
    WHEN TAG IN ('CREATE FUNCTION', 'ALTER FUNCTION', 'CREATE PROCEDURE',
                 'ALTER PROCEDURE', 'CREATE AGGREGATE', 'ALTER AGGREGATE',
                 'ALTER ROUTINE', 'ALTER EXTENSION')
    EXECUTE FUNCTION pgsentinel_refuse_overloads();
