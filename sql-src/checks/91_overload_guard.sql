
-- The event trigger that refuses, once pgsentinel is installed, what the
-- check above refuses at installation: a function, procedure or aggregate
-- that would make pgsentinel's calls ambiguous
-- (the view pgsentinel_ambiguous_routines): the archiver would stop, the reports
-- fail, and a role with CREATE on the schema could make one at any time
-- (docs/security.md).  It fires on the commands that make or move a
-- routine, and on ALTER EXTENSION (an update that adds a function named
-- like a routine already there).  Only a superuser can disable it, and
-- pgsentinel_status() still names such a routine made meanwhile.  It also
-- refuses to rename pgsentinel's schema (ALTER SCHEMA): the bodies, this
-- trigger and the workers name our objects in the schema by its name, and
-- would find under the old name whatever another role makes there.
CREATE FUNCTION pgsentinel_refuse_overloads()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c record;
    found text;
BEGIN
    IF EXISTS (SELECT FROM pg_event_trigger_ddl_commands() d
                 JOIN pg_extension e ON e.extname = 'pgsentinel'
                  AND e.extnamespace = d.objid
                 JOIN pg_namespace n ON n.oid = d.objid
                WHERE d.classid = 'pg_namespace'::regclass
                  AND n.nspname <> (parse_ident('@extschema@'))[1]) THEN
        RAISE EXCEPTION 'the schema of pgsentinel cannot be renamed'
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'pgsentinel''s functions, views and workers name its objects in schema ' || quote_ident((parse_ident('@extschema@'))[1]) || '.',
                  HINT = 'To move pgsentinel, drop it and create it in the other schema; DROP EXTENSION drops its archive (docs/archive.md says how to keep it).';
    END IF;
    FOR c IN SELECT d.classid, d.objid FROM pg_event_trigger_ddl_commands() d
              WHERE d.classid IN ('pg_proc'::regclass, 'pg_extension'::regclass)
    LOOP
        SELECT pg_describe_object('pg_proc'::regclass, r.routine, 0) INTO found
          FROM @extschema@.pgsentinel_ambiguous_routines r
         WHERE CASE WHEN c.classid = 'pg_proc'::regclass THEN r.routine::oid = c.objid
                    ELSE c.objid = (SELECT e.oid FROM pg_extension e
                                     WHERE e.extname = 'pgsentinel') END
         LIMIT 1;
        IF found IS NOT NULL THEN
            RAISE EXCEPTION '% would make pgsentinel''s calls of that name ambiguous',
                            found
                USING ERRCODE = 'duplicate_function',
                      DETAIL = 'It is named like a function of pgsentinel and takes defaults, or the leading arguments of one that has defaults: a call of pgsentinel''s function could then mean either.',
                      HINT = 'Give it another name or create it in another schema; see docs/security.md.';
        END IF;
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_refuse_overloads() FROM PUBLIC;

CREATE EVENT TRIGGER pgsentinel_refuse_overloads ON ddl_command_end
    WHEN TAG IN ('CREATE FUNCTION', 'ALTER FUNCTION', 'CREATE PROCEDURE',
                 'ALTER PROCEDURE', 'CREATE AGGREGATE', 'ALTER AGGREGATE',
                 'ALTER ROUTINE', 'ALTER EXTENSION', 'ALTER SCHEMA')
    EXECUTE FUNCTION pgsentinel_refuse_overloads();
