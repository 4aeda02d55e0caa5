
-- The fleet's setup, one call per server (docs/fleet.md), and the pull
-- transport.  Run on the repository, by a superuser: they create
-- subscriptions, foreign servers and user mappings.  They reach the
-- source through dblink (its checks, its publication and slot) and pull
-- through postgres_fdw; both extensions must exist in the repository.

-- The schema of an extension, or an error saying how to create it.
CREATE FUNCTION pgsentinel_fleet_needs(extension name)
RETURNS name
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
BEGIN
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = extension;
    IF s IS NULL THEN
        RAISE EXCEPTION 'the fleet needs the extension % in this database', extension
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('Run CREATE EXTENSION %s; in the repository database.', extension);
    END IF;
    RETURN s;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_needs(name) FROM PUBLIC;

-- Whether a rollback of the caller's transaction could undo what this
-- statement does: an explicit or implicit transaction block, a
-- subtransaction, a pipeline (src/fleet/transaction_block.c).  The calls
-- that change another server at once refuse to run then.
CREATE FUNCTION pgsentinel_in_transaction_block()
RETURNS boolean
AS 'MODULE_PATHNAME', 'pgsentinel_in_transaction_block'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- The key = value pairs of a conninfo string, read as libpq reads them: a
-- value is quoted ('...', where \' and \\ stand for ' and \) or runs to
-- the next white space, and a backslash takes the next character as it is
-- in both.  What is not a pair comes back as one row with a NULL key.
CREATE FUNCTION pgsentinel_fleet_conninfo(conninfo text)
RETURNS TABLE (key text, value text)
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
SELECT m[1], pg_catalog.regexp_replace(COALESCE(m[3], m[4]), '\\(.)', '\1', 'g')
  FROM pg_catalog.regexp_matches(conninfo,
           '([A-Za-z_]+)\s*=\s*(''((?:[^''\\]|\\.)*)''|((?:\\.|[^\s''\\])(?:\\.|[^\s\\])*))', 'g') AS m
UNION ALL
SELECT NULL, r.rest
  FROM (SELECT pg_catalog.regexp_replace(conninfo,
                   '([A-Za-z_]+)\s*=\s*(''((?:[^''\\]|\\.)*)''|((?:\\.|[^\s''\\])(?:\\.|[^\s\\])*))', '', 'g') AS rest) r
 WHERE r.rest OPERATOR(pg_catalog.!~) '^\s*$';
END;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_conninfo(text) FROM PUBLIC;

-- Add a server to the fleet: method 'logical' (a primary with wal_level =
-- logical: its archive is published and subscribed to) or 'pull' (a
-- standby, or any server that cannot publish: the repository reads its
-- ring through postgres_fdw every pull_interval).  Checks the source
-- first.  A name removed with its history kept is added again with the
-- same server id: its history goes on after its newest sample.  node: the
-- repository node (a postgres_fdw server here) that keeps the server's
-- partitions (56_fleet_nodes.sql); NULL, this database.  Returns the
-- server id.
CREATE FUNCTION pgsentinel_fleet_add(
    name text,
    conninfo text,
    method text DEFAULT 'logical',
    keep_one_in integer DEFAULT 1,
    pull_interval interval DEFAULT '10 seconds',
    retention interval DEFAULT '30 days',
    node text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
-- (a source's date is read as text: in a DateStyle any server writes alike)
SET DateStyle = 'ISO, YMD'
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    dbl name;
    fdw name;
    srv integer;
    old record;
    probe record;
    sub name;
    slot name;
    fsrv name;
    sysid text;
    newest timestamptz;
    newest_statement timestamptz;
    opts text;
    uopts text;
    slot_made boolean := false;
    placed boolean := false;
    first_day date;
    intruders text;
    busy boolean := false;
    probe_table regclass;
BEGIN
    IF name IS NULL OR name !~ '^[A-Za-z0-9_.-]{1,40}$' THEN
        RAISE EXCEPTION 'invalid fleet server name "%"', name
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use 1 to 40 letters, digits, "_", "." or "-".';
    END IF;
    IF method IS NULL OR method NOT IN ('logical', 'pull') THEN
        RAISE EXCEPTION 'unknown fleet method "%"', method
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use method => ''logical'' for a primary, ''pull'' for a standby.';
    END IF;
    IF conninfo IS NULL OR keep_one_in IS NULL OR keep_one_in NOT BETWEEN 1 AND 3600
       OR pull_interval IS NULL OR pull_interval < interval '100 milliseconds'
       OR retention IS NULL OR retention < interval '1 day' THEN
        RAISE EXCEPTION 'invalid fleet settings for "%"', name
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'conninfo is required; keep_one_in is 1 to 3600, pull_interval at least 100ms, retention at least 1 day.';
    END IF;
    -- a URI would be stored with its password and, not parsed into the
    -- foreign server's options, pull from libpq's default server
    IF conninfo ~* '^\s*postgres(ql)?://' THEN
        RAISE EXCEPTION 'the conninfo of "%" is a URI', name
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Give it as key=value pairs, e.g. ''host=db1 port=5432 dbname=postgres user=pgs''.';
    END IF;
    -- a routine another role created in our schema that makes our calls
    -- ambiguous: not a schema to set up a fleet in (pgsentinel_status()
    -- names them too)
    SELECT string_agg(r.routine::text, ', ') INTO intruders
      FROM @extschema@.pgsentinel_ambiguous_routines r;
    IF intruders IS NOT NULL THEN
        RAISE EXCEPTION 'functions named like pgsentinel''s are in its schema: %', intruders
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'They are not part of the extension: another role created them, and they make pgsentinel''s calls of those names ambiguous.',
                  HINT = 'Drop them after checking what they are, and let only trusted roles create in that schema (docs/security.md).';
    END IF;
    PERFORM @extschema@.pgsentinel_fleet_check_schema();
    -- what is kept and given to postgres_fdw is what libpq would read
    EXECUTE format('SELECT string_agg(c.value, '' '') FROM %I.pgsentinel_fleet_conninfo($1) c WHERE c.key IS NULL', s)
        INTO intruders USING conninfo;
    IF intruders IS NOT NULL THEN
        RAISE EXCEPTION 'the conninfo of "%" is not a list of key=value pairs', name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('Not read as a pair: "%s".', left(btrim(intruders), 40)),
                  HINT = 'Quote a value with spaces or quotes as libpq reads it (password=''it\''s''), or keep the password in a passfile (docs/fleet.md).';
    END IF;
    SELECT @extschema@.pgsentinel_fleet_needs('dblink'::pg_catalog.name) INTO dbl;
    -- dblink lets whoever may call it open connections from this server
    -- (to probe ports, or reach what trusts this host): the fleet is not
    -- the reason every role may
    SELECT string_agg(DISTINCT p.proname, ', ' ORDER BY p.proname) INTO intruders
      FROM pg_depend d
      JOIN pg_proc p ON p.oid = d.objid
      JOIN pg_extension e ON e.oid = d.refobjid
     WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass
       AND d.deptype = 'e' AND e.extname = 'dblink'
       AND p.proname IN ('dblink', 'dblink_connect', 'dblink_exec', 'dblink_send_query')
       AND has_schema_privilege('public', p.pronamespace, 'USAGE')
       AND has_function_privilege('public', p.oid, 'EXECUTE');
    IF intruders IS NOT NULL THEN
        RAISE EXCEPTION 'every role may open connections from this server through dblink'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('PUBLIC may execute %s in schema %s.', intruders, dbl),
                  HINT = 'Install dblink in a schema only superusers use (DROP EXTENSION dblink; CREATE SCHEMA fleet_ext; CREATE EXTENSION dblink SCHEMA fleet_ext;), or revoke EXECUTE on its functions from PUBLIC.';
    END IF;
    IF method = 'pull' OR node IS NOT NULL THEN
        SELECT @extschema@.pgsentinel_fleet_needs('postgres_fdw'::pg_catalog.name) INTO fdw;
    END IF;

    -- one server per name; a removed one comes back with its history
    EXECUTE format('SELECT * FROM %I.pgsentinel_fleet_server f WHERE f.name = $1 FOR UPDATE', s)
        INTO old USING name;
    IF old.server_id IS NOT NULL AND old.removed IS NULL THEN
        RAISE EXCEPTION 'fleet server "%" exists already (method %)', name, old.method
            USING ERRCODE = 'duplicate_object',
                  HINT = format('Choose another name, or remove it first: SELECT pgsentinel_fleet_remove(%L);', name);
    END IF;
    -- the node first: before anything is made on the source
    IF node IS NOT NULL THEN
        -- the partitions made there are committed there at once
        SELECT @extschema@.pgsentinel_in_transaction_block() INTO busy;
        IF busy THEN
            RAISE EXCEPTION 'pgsentinel_fleet_add(node => ...) cannot run inside a transaction block'
                USING ERRCODE = 'active_sql_transaction',
                      HINT = format('It makes the server''s partitions on node "%s", which a rollback here would leave there: call it on its own.', node);
        END IF;
        PERFORM @extschema@.pgsentinel_fleet_node_schema(node::pg_catalog.name, NULL::pg_catalog.int4);
    END IF;
    -- a server's history stays where it is
    IF old.server_id IS NOT NULL AND old.node IS DISTINCT FROM node THEN
        RAISE EXCEPTION 'the history of fleet server "%" is %', name,
                        coalesce(format('on repository node "%s"', old.node), 'in this database')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = format('Add it again with node => %s, or remove its history first: SELECT pgsentinel_fleet_remove(%L, keep_history => false);',
                                coalesce(quote_literal(old.node), 'NULL'), name);
    END IF;

    -- the source: reachable, pgsentinel there in a version that has the fleet
    BEGIN
        EXECUTE format($q$
            SELECT * FROM %I.dblink($1, $r$
                SELECT n.nspname::pg_catalog.text, e.extversion::pg_catalog.text,
                       CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')
                            THEN (SELECT c.system_identifier FROM pg_catalog.pg_control_system() c)::pg_catalog.text
                       END,
                       pg_catalog.pg_is_in_recovery(),
                       pg_catalog.current_setting('wal_level'),
                       pg_catalog.to_regclass(pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.pgsentinel_ring_samples') IS NOT NULL,
                       (SELECT n2.nspname::pg_catalog.text
                          FROM pg_catalog.pg_extension e2
                          JOIN pg_catalog.pg_namespace n2 ON n2.oid OPERATOR(pg_catalog.=) e2.extnamespace
                         WHERE e2.extname OPERATOR(pg_catalog.=) 'pg_stat_statements'),
                       pg_catalog.to_regclass(pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.pgsentinel_ring_statements') IS NOT NULL,
                       (SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 3
                          FROM pg_catalog.pg_attribute a
                         WHERE a.attrelid OPERATOR(pg_catalog.=) ANY (ARRAY[
                                   pg_catalog.to_regclass(pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.pgsentinel_archive_batch'),
                                   pg_catalog.to_regclass(pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.pgsentinel_archive_statement_batch')]::pg_catalog.oid[])
                           AND a.attname OPERATOR(pg_catalog.=) ANY (ARRAY['row_data', 'sample_data']::pg_catalog.name[])
                           AND NOT a.attisdropped
                           AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.bytea'::pg_catalog.regtype::pg_catalog.oid),
                       pg_catalog.current_setting('server_encoding')
                  FROM pg_catalog.pg_extension e
                  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
                 WHERE e.extname OPERATOR(pg_catalog.=) 'pgsentinel'
                UNION ALL
                SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
                 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_extension e
                                    WHERE e.extname OPERATOR(pg_catalog.=) 'pgsentinel')
            $r$) AS t(schema text, version text, sysid text, standby boolean,
                      wal_level text, fleet boolean, pgss_schema text,
                      ring_statements boolean, row_data boolean,
                      server_encoding text)$q$, dbl)
            INTO probe USING conninfo;
    EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception THEN
        RAISE EXCEPTION 'cannot connect to fleet server "%": %', name, SQLERRM
            USING ERRCODE = 'connection_exception',
                  HINT = 'Check the conninfo (host, port, dbname, user, password) and that the source accepts connections from the repository (pg_hba.conf).';
    END;
    IF probe.schema IS NULL THEN
        RAISE EXCEPTION 'pgsentinel is not installed in the database that conninfo names for "%"', name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Run CREATE EXTENSION pgsentinel there (in the database of pgsentinel.db_name, where the archive is), or fix dbname in the conninfo.';
    END IF;
    IF NOT probe.fleet THEN
        RAISE EXCEPTION 'pgsentinel % on "%" is too old for the fleet', probe.version, name
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run ALTER EXTENSION pgsentinel UPDATE there (on its primary for a standby).';
    END IF;
    sysid := probe.sysid;

    IF method = 'logical' THEN
        IF probe.standby THEN
            RAISE EXCEPTION 'fleet server "%" is a standby: it cannot publish', name
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Add it with method => ''pull'' (nothing is archived on a standby: the repository reads its ring).';
        END IF;
        IF sysid = (SELECT c.system_identifier FROM pg_control_system() c)::text THEN
            -- the slot's creation would wait for this very transaction
            RAISE EXCEPTION 'fleet server "%" is this cluster (or a copy of it): it cannot subscribe to itself', name
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Add it with method => ''pull''.';
        END IF;
        IF probe.wal_level <> 'logical' THEN
            RAISE EXCEPTION 'wal_level is "%" on fleet server "%": method logical needs "logical"', probe.wal_level, name
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Run ALTER SYSTEM SET wal_level = logical there and restart it, or add it with method => ''pull''.';
        END IF;
        -- the slot this makes on the source would outlive a rollback of
        -- the caller's transaction
        SELECT @extschema@.pgsentinel_in_transaction_block() INTO busy;
        IF busy THEN
            RAISE EXCEPTION 'pgsentinel_fleet_add(method => ''logical'') cannot run inside a transaction block'
                USING ERRCODE = 'active_sql_transaction',
                      HINT = 'It makes a replication slot on the source, which a rollback here would leave holding WAL there: call it on its own.';
        END IF;
        -- the batches' rows and samples are versioned payloads (row_data,
        -- sample_data), checked as each batch lands (an unknown format is
        -- refused there); an earlier 2.1 build's archive has its row or
        -- sample columns as columns, which logical replication cannot map
        -- onto this one's
        IF NOT coalesce(probe.row_data, false) THEN
            RAISE EXCEPTION 'the archive of fleet server "%" is not in this repository''s format (pgsentinel % there)', name, probe.version
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Install this build of pgsentinel there (ALTER EXTENSION pgsentinel UPDATE, or for a development build of 2.1 DROP and CREATE EXTENSION), or add it with method => ''pull''.';
        END IF;
        -- the payload's texts are bytes to logical replication, copied
        -- without the conversion a text column gets: they must already be
        -- in this database's encoding (a pull converts them as it reads)
        IF probe.server_encoding <> pg_catalog.current_setting('server_encoding') THEN
            RAISE EXCEPTION 'fleet server "%" is in encoding % but this repository is in %', name, probe.server_encoding, pg_catalog.current_setting('server_encoding')
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Logical replication copies the archive''s texts as they are: add it with method => ''pull'', which converts them, or keep the repository in a database of the same encoding.';
        END IF;
        IF probe.schema <> s THEN
            RAISE EXCEPTION 'pgsentinel is in schema "%" on fleet server "%" but in "%" here', probe.schema, name, s
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Logical replication matches tables by schema and name: install pgsentinel in the same schema on the repository, or use method => ''pull''.';
        END IF;
    END IF;

    IF old.server_id IS NOT NULL THEN
        srv := old.server_id;
        EXECUTE format('SELECT x.last_time FROM %I.pgsentinel_fleet_batch x WHERE x.server_id = $1 ORDER BY x.first_time DESC LIMIT 1', s)
            INTO newest USING srv;
        EXECUTE format('SELECT max(x.last_time) FROM %I.pgsentinel_fleet_statement_batch x WHERE x.server_id = $1', s)
            INTO newest_statement USING srv;
    ELSE
        EXECUTE format('SELECT nextval(%L)', quote_ident(s) || '.pgsentinel_fleet_server_server_id_seq')
            INTO srv;
    END IF;

    -- the names this call gives must be free: DROP EXTENSION leaves the
    -- subscriptions and foreign servers of its fleet behind, and a new
    -- installation numbers its servers from 1 again
    IF EXISTS (SELECT FROM pg_subscription u
                WHERE u.subname = 'pgsentinel_fleet_' || srv::text
                  AND u.subdbid = (SELECT d.oid FROM pg_database d
                                    WHERE d.datname = current_database()))
       OR EXISTS (SELECT FROM pg_foreign_server f WHERE f.srvname = 'pgsentinel_fleet_' || srv::text) THEN
        RAISE EXCEPTION 'a subscription or foreign server named "pgsentinel_fleet_%" exists already', srv
            USING ERRCODE = 'duplicate_object',
                  DETAIL = 'It belongs to no server of this repository''s fleet: an earlier installation of pgsentinel left it (DROP EXTENSION does not drop what pgsentinel_fleet_add() created).',
                  HINT = format('Drop it if nothing uses it (DROP SUBSCRIPTION %1$I, or DROP SERVER %1$I CASCADE); or call again: the next call takes the next number.',
                                'pgsentinel_fleet_' || srv::text);
    END IF;

    BEGIN
        IF method = 'logical' THEN
            -- landing partitions for the days the repository has no partition
            -- of: the trigger moves every row out of them
            FOREACH sub IN ARRAY ARRAY['pgsentinel_archive_batch', 'pgsentinel_archive_session',
                                       'pgsentinel_archive_text', 'pgsentinel_archive_statement_batch',
                                       'pgsentinel_archive_statement_text'] LOOP
                IF to_regclass(format('%I.%I', s, sub || '_fleet')) IS NULL THEN
                    EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I DEFAULT', s, sub || '_fleet', s, sub);
                ELSIF NOT EXISTS (SELECT FROM pg_inherits i
                                    JOIN pg_class c ON c.oid = i.inhrelid
                                    JOIN pg_class pc ON pc.oid = i.inhparent
                                   WHERE c.oid = to_regclass(format('%I.%I', s, sub || '_fleet'))
                                     AND pc.oid = to_regclass(format('%I.%I', s, sub))
                                     AND pc.relowner = c.relowner) THEN
                    RAISE EXCEPTION 'relation "%.%" is not the partition pgsentinel makes there', s, sub || '_fleet'
                        USING ERRCODE = 'duplicate_table',
                              DETAIL = format('It is not a partition of %I.%I with its owner: another role created it under a name pgsentinel uses.', s, sub),
                              HINT = 'Keep what it holds elsewhere, drop or rename it, then call again.';
                END IF;
            END LOOP;
            sub := 'pgsentinel_fleet_' || srv::text;
            slot := format('pgs_fleet_%s_%s',
                           (SELECT c.system_identifier FROM pg_control_system() c), srv);
            EXECUTE format('SELECT * FROM %I.dblink($1, $r$SELECT %I.pgsentinel_fleet_publish()::pg_catalog.text$r$) AS t(p text)',
                           dbl, probe.schema)
                USING conninfo;
            EXECUTE format('SELECT * FROM %I.dblink($1, $r$SELECT pg_catalog.pg_create_logical_replication_slot(%L, ''pgoutput'')::pg_catalog.text$r$) AS t(p text)',
                           dbl, slot)
                USING conninfo;
            slot_made := true;
            EXECUTE format('CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION pgsentinel_fleet
                            WITH (create_slot = false, slot_name = %L, copy_data = true)',
                           sub, conninfo, slot);
        ELSE
            fsrv := 'pgsentinel_fleet_' || srv::text;
            -- the names of its foreign tables must be free: a relation
            -- another role made there first would be read by every pull
            FOREACH sub IN ARRAY ARRAY['_samples', '_ash', '_statements', '_pgss'] LOOP
                SELECT @extschema@.pgsentinel_fleet_foreign_table(fsrv::pg_catalog.name, sub::pg_catalog.text) INTO probe_table;
                IF probe_table IS NOT NULL THEN
                    RAISE EXCEPTION 'relation "%.%" exists already', s, fsrv || sub
                        USING ERRCODE = 'duplicate_table',
                              HINT = 'Keep what it holds elsewhere, drop or rename it, then call again.';
                END IF;
            END LOOP;
            EXECUTE format('SELECT string_agg(format(''%%I %%L'', c.key, c.value), '', '')
                                       FILTER (WHERE c.key NOT IN (''user'', ''password'')),
                                   string_agg(format(''%%I %%L'', c.key, c.value), '', '')
                                       FILTER (WHERE c.key IN (''user'', ''password''))
                              FROM %I.pgsentinel_fleet_conninfo($1) c', s)
                INTO opts, uopts USING conninfo;
            -- a source that does not answer must fail the pull, not hang it
            -- (connecting is not interrupted by statement_timeout everywhere)
            IF NOT EXISTS (SELECT FROM pg_catalog.regexp_matches(conninfo, '(^|\s)connect_timeout\s*=')) THEN
                opts := concat_ws(', ', opts, 'connect_timeout ''10''');
            END IF;
            EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER postgres_fdw%s',
                           fsrv, CASE WHEN opts IS NOT NULL THEN ' OPTIONS (' || opts || ')' ELSE '' END);
            EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I%s',
                           fsrv, CASE WHEN uopts IS NOT NULL THEN ' OPTIONS (' || uopts || ')' ELSE '' END);
            EXECUTE format('CREATE FOREIGN TABLE %I.%I (
                                sample_id bigint, sample_time timestamptz,
                                sample_period double precision, active_sessions integer)
                            SERVER %I OPTIONS (schema_name %L, table_name ''pgsentinel_ring_samples'')',
                           s, fsrv || '_samples', fsrv, probe.schema);
            EXECUTE format('CREATE FOREIGN TABLE %I.%I (
                                --@columns ash decl
                            )
                            SERVER %I OPTIONS (schema_name %L, table_name ''pg_active_session_history'')',
                           s, fsrv || '_ash', fsrv, probe.schema);
            EXECUTE format('REVOKE ALL ON %I.%I, %I.%I FROM PUBLIC', s, fsrv || '_samples', s, fsrv || '_ash');
            -- the statements ring's deltas (a source of an earlier 2.1 has no
            -- view of them: its statements are not pulled), and the texts of
            -- pg_stat_statements for the statements the source's archive has
            -- no text of, when it is installed in that database
            IF probe.ring_statements THEN
                EXECUTE format('CREATE FOREIGN TABLE %I.%I (
                                    ash_time timestamptz, prev_ash_time timestamptz, sample_id bigint,
                                    userid oid, dbid oid, queryid bigint, toplevel boolean,
                                    reset boolean, calls bigint, rows bigint,
                                    exec_ms double precision, plans bigint,
                                    plan_ms double precision, shared_blks_hit bigint,
                                    shared_blks_read bigint, shared_blks_dirtied bigint,
                                    shared_blks_written bigint, temp_blks_read bigint,
                                    temp_blks_written bigint, wal_bytes numeric, query text)
                                SERVER %I OPTIONS (schema_name %L, table_name ''pgsentinel_ring_statements'')',
                               s, fsrv || '_statements', fsrv, probe.schema);
                EXECUTE format('REVOKE ALL ON %I.%I FROM PUBLIC', s, fsrv || '_statements');
            END IF;
            IF probe.ring_statements AND probe.pgss_schema IS NOT NULL THEN
                EXECUTE format('CREATE FOREIGN TABLE %I.%I (
                                    queryid bigint, dbid oid, userid oid, query text)
                                SERVER %I OPTIONS (schema_name %L, table_name ''pg_stat_statements'')',
                               s, fsrv || '_pgss', fsrv, probe.pgss_schema);
                EXECUTE format('REVOKE ALL ON %I.%I FROM PUBLIC', s, fsrv || '_pgss');
            END IF;
        END IF;

        -- the server's row; the conninfo kept without its password (the
        -- subscription or the user mapping has it)
        EXECUTE format($q$
            INSERT INTO %I.pgsentinel_fleet_server AS f
                   (server_id, name, method, conninfo, system_identifier, remote_version,
                    subscription, slot_name, feed, accept_after, foreign_server,
                    pull_interval, pulled_until, statements_pulled_until, keep_one_in, retention,
                    node)
            VALUES ($1, $2, $3,
                    (SELECT string_agg(c.key || '=' ||
                                       CASE WHEN c.value ~ '^[^\s''\\]+$' THEN c.value
                                            ELSE '''' || replace(replace(c.value, '\', '\\'), '''', '\''') || ''''
                                       END, ' ')
                       FROM %1$I.pgsentinel_fleet_conninfo($4) c WHERE c.key <> 'password'),
                    $5::bigint, $6, $7, $8,
                    coalesce((SELECT u.oid::bigint FROM pg_subscription u
                               WHERE u.subname = $7
                                 AND u.subdbid = (SELECT d.oid FROM pg_database d
                                                   WHERE d.datname = current_database())), 0),
                    $9, $10, $11, $9, $14, $12, $13, $15)
            ON CONFLICT (server_id) DO UPDATE
               SET method = excluded.method, conninfo = excluded.conninfo,
                   system_identifier = excluded.system_identifier,
                   remote_version = excluded.remote_version,
                   subscription = excluded.subscription, slot_name = excluded.slot_name,
                   feed = excluded.feed, accept_after = excluded.accept_after,
                   foreign_server = excluded.foreign_server,
                   pull_interval = excluded.pull_interval, pulled_until = excluded.pulled_until,
                   statements_pulled_until = greatest(f.statements_pulled_until,
                                                      excluded.statements_pulled_until),
                   keep_one_in = excluded.keep_one_in, retention = excluded.retention,
                   last_pull = NULL, last_error = NULL, removed = NULL$q$, s)
            USING srv, name, method, conninfo, sysid, probe.version,
                  CASE WHEN method = 'logical' THEN sub END, slot, newest, fsrv,
                  pull_interval, keep_one_in, retention, newest_statement, node;
        -- a new server on a node: its partitions there, from the day of the
        -- oldest row a subscription's initial copy brings (the trigger
        -- makes a missing day here, not there) or of the oldest a pull
        -- takes
        IF node IS NOT NULL AND old.server_id IS NULL THEN
            first_day := timezone('UTC', now())::date - 2;
            IF method = 'logical' THEN
                EXECUTE format($q$
                    SELECT * FROM %I.dblink($1, $r$
                        SELECT pg_catalog.to_char(pg_catalog.timezone('UTC', LEAST(
                                   (SELECT pg_catalog.min(x.first_time) FROM %I.pgsentinel_archive_batch x),
                                   (SELECT pg_catalog.min(x.first_time) FROM %I.pgsentinel_archive_statement_batch x))),
                                   'YYYY-MM-DD')
                    $r$) AS t(d text)$q$, dbl, probe.schema, probe.schema)
                    INTO first_day USING conninfo;
                first_day := least(coalesce(first_day, timezone('UTC', now())::date - 2),
                                   timezone('UTC', now())::date - 2);
            END IF;
            first_day := greatest(first_day, (timezone('UTC', now() - retention))::date);
            PERFORM @extschema@.pgsentinel_fleet_node_schema(node::pg_catalog.name, srv::pg_catalog.int4);
            -- (a placement that fails drops what it made itself: what
            -- another repository made meanwhile stays)
            PERFORM @extschema@.pgsentinel_fleet_node_place(srv::pg_catalog.int4, node::pg_catalog.name, first_day::pg_catalog.date);
            placed := true;
        END IF;
        PERFORM @extschema@.pgsentinel_fleet_partitions(srv, NULL::pg_catalog.date, NULL::pg_catalog.date);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        -- whatever failed or was cancelled after the slot was made on the
        -- source (this transaction rolls back, the slot would not): it
        -- would hold WAL there for ever
        IF slot_made THEN
            BEGIN
                EXECUTE format('SELECT * FROM %I.dblink($1, $r$SELECT pg_catalog.pg_drop_replication_slot(%L)::pg_catalog.text$r$) AS t(p text)',
                               dbl, slot)
                    USING CASE WHEN conninfo ~ '(^|\s)connect_timeout\s*=' THEN conninfo
                               ELSE conninfo || ' connect_timeout=10' END;
            EXCEPTION WHEN OTHERS THEN
                RAISE WARNING 'replication slot "%" is left on fleet server "%": %', slot, name, SQLERRM
                    USING HINT = format('Drop it there: SELECT pg_drop_replication_slot(%L);', slot);
            END;
        END IF;
        -- and the partitions made on a node
        IF placed THEN
            BEGIN
                PERFORM @extschema@.pgsentinel_fleet_node_drop(srv::pg_catalog.int4, node::pg_catalog.name);
            EXCEPTION WHEN OTHERS THEN
                RAISE WARNING 'the partitions of fleet server id % are left on repository node "%": %', srv, node, SQLERRM
                    USING HINT = format('Drop them there: the tables named pgsentinel_fleet_*_%s.', srv);
            END;
        END IF;
        RAISE;
    END;
    RETURN srv;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_add(text, text, text, integer, interval, interval, text) FROM PUBLIC;

-- Remove a server from the fleet: its subscription (and the slot on the
-- source, when the source can be reached: otherwise a warning names the
-- slot to drop there) or its foreign server.  keep_history: its rows stay
-- until its retention drops them, and the name can be added again to go
-- on; otherwise they are dropped now, with the name.
CREATE FUNCTION pgsentinel_fleet_remove(name text, keep_history boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    dbl name;
    f record;
    t text;
    deadline timestamptz;
    dropped boolean;
    ci text;
    ddl text;
    busy boolean := false;
BEGIN
    EXECUTE format('SELECT * FROM %I.pgsentinel_fleet_server f WHERE f.name = $1 FOR UPDATE', s)
        INTO f USING name;
    IF f.server_id IS NULL THEN
        RAISE EXCEPTION 'no fleet server "%"', name
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM pgsentinel_fleet_status; lists them.';
    END IF;
    -- a drop on a node is committed there at once: a rollback here would
    -- leave this repository pointing at tables that are gone
    IF f.node IS NOT NULL AND NOT keep_history THEN
        SELECT @extschema@.pgsentinel_in_transaction_block() INTO busy;
    END IF;
    IF busy THEN
        RAISE EXCEPTION 'pgsentinel_fleet_remove(keep_history => false) of a server on a repository node cannot run inside a transaction block'
            USING ERRCODE = 'active_sql_transaction',
                  HINT = format('It drops the server''s partitions on node "%s", which a rollback here would not bring back: call it on its own.', f.node);
    END IF;
    IF f.removed IS NULL AND f.method = 'logical' AND f.subscription IS NOT NULL
       AND EXISTS (SELECT FROM pg_subscription u WHERE u.subname = f.subscription) THEN
        SELECT u.subconninfo INTO ci FROM pg_subscription u WHERE u.subname = f.subscription;
        EXECUTE format('ALTER SUBSCRIPTION %I DISABLE', f.subscription);
        EXECUTE format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', f.subscription);
        EXECUTE format('DROP SUBSCRIPTION %I', f.subscription);
        -- the walsender of the stopped worker lets the slot go shortly after
        dropped := false;
        deadline := clock_timestamp() + interval '30 seconds';
        BEGIN
            SELECT n.nspname INTO dbl
              FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
             WHERE e.extname = 'dblink';
            LOOP
                EXECUTE format('SELECT * FROM %I.dblink($1, $r$
                                  SELECT pg_catalog.count(pg_catalog.pg_drop_replication_slot(r.slot_name)) OPERATOR(pg_catalog.=) 1
                                    FROM pg_catalog.pg_replication_slots r
                                   WHERE r.slot_name OPERATOR(pg_catalog.=) %L AND NOT r.active$r$) AS t(d boolean)',
                               dbl, f.slot_name)
                    INTO dropped USING ci;
                EXIT WHEN dropped OR clock_timestamp() > deadline;
                PERFORM pg_sleep(0.1);
            END LOOP;
        EXCEPTION WHEN OTHERS THEN
            dropped := false;
        END;
        IF NOT dropped THEN
            RAISE WARNING 'the replication slot "%" of fleet server "%" could not be dropped on the source', f.slot_name, name
                USING HINT = format('It holds WAL there until dropped: run SELECT pg_drop_replication_slot(%L); on the source.', f.slot_name);
        END IF;
    END IF;
    IF f.removed IS NULL AND f.method = 'pull' AND f.foreign_server IS NOT NULL THEN
        -- its foreign tables: those of its foreign server, whatever else
        -- another role may have created under their names
        FOR t IN SELECT format('DROP FOREIGN TABLE %s', c.oid::regclass)
                   FROM pg_foreign_table ft
                   JOIN pg_foreign_server x ON x.oid = ft.ftserver
                   JOIN pg_class c ON c.oid = ft.ftrelid
                  WHERE x.srvname = f.foreign_server
                    AND c.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = s)
                  ORDER BY c.relname LOOP
            EXECUTE t;
        END LOOP;
        EXECUTE format('DROP USER MAPPING IF EXISTS FOR PUBLIC SERVER %I', f.foreign_server);
        EXECUTE format('DROP SERVER IF EXISTS %I', f.foreign_server);
    END IF;
    IF keep_history THEN
        EXECUTE format('UPDATE %I.pgsentinel_fleet_server SET removed = now(), subscription = NULL,
                               foreign_server = NULL WHERE server_id = $1', s)
            USING f.server_id;
    ELSE
        FOR t IN EXECUTE format('SELECT x.parent FROM %I.pgsentinel_fleet_partitioned() x
                                  ORDER BY x.parent', s) LOOP
            -- (a partition on another node is a foreign table here; its
            -- rows stay there).  Only the server's partition of our table:
            -- a relation another role made under its name is not dropped
            ddl := NULL;
            SELECT format('DROP %s %s',
                          CASE WHEN c.relkind = 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
                          c.oid::regclass)
              INTO ddl
              FROM pg_class pc
              JOIN pg_inherits i ON i.inhparent = pc.oid
              JOIN pg_class c ON c.oid = i.inhrelid
             WHERE pc.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = s)
               AND pc.relname = t
               AND c.relnamespace = pc.relnamespace
               AND c.relname = t || '_' || f.server_id::text
               AND c.relowner = pc.relowner;
            IF ddl IS NOT NULL THEN
                EXECUTE ddl;
            END IF;
        END LOOP;
        EXECUTE format('DELETE FROM %I.pgsentinel_fleet_server WHERE server_id = $1', s)
            USING f.server_id;
        -- the partitions on a node last (committed there at once): a node
        -- that cannot be reached keeps them, a warning says so, and the
        -- archiver drops them there once it can
        IF f.node IS NOT NULL THEN
            BEGIN
                PERFORM @extschema@.pgsentinel_fleet_node_drop(f.server_id::pg_catalog.int4, f.node::pg_catalog.name);
            EXCEPTION WHEN OTHERS THEN
                RAISE WARNING 'the partitions of fleet server "%" are left on repository node "%": %', name, f.node, SQLERRM
                    USING HINT = format('The archiver drops them there when it is back (every ten minutes, while pgsentinel_fleet_pending_drop lists them): the tables named pgsentinel_fleet_*_%s.', f.server_id);
                EXECUTE format('INSERT INTO %I.pgsentinel_fleet_pending_drop AS x (node, server_id, last_error)
                                VALUES ($1, $2, $3)
                                ON CONFLICT (node, server_id) DO UPDATE SET last_error = excluded.last_error', s)
                    USING f.node, f.server_id, SQLERRM;
            END;
        END IF;
    END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_remove(text, boolean) FROM PUBLIC;
