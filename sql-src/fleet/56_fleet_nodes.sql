
-- Repository nodes (docs/fleet.md, "When the repository outgrows one
-- machine"): pgsentinel_fleet_add(..., node => 'b') keeps a server's
-- partitions on node b, a postgres_fdw server of this database (the
-- coordinator) whose database has pgsentinel installed.  The coordinator
-- makes them there, and here foreign partitions of its fleet tables that
-- point to them: every insert (the trigger, the pull, the rollups) and
-- every read of the server goes through postgres_fdw, nothing else
-- travels.  The coordinator's archiver keeps their days there
-- (pgsentinel_fleet_node_keep(), before each tick).
--
-- The coordinator talks to a node through dblink over the node's foreign
-- server (its user mapping), as the role the mapping names, which must
-- own pgsentinel's schema there or be a superuser.  Every statement sent
-- names its objects with the node's schema and pg_catalog, as our own SQL
-- does here.

-- The node's pgsentinel schema, after checking that node is a postgres_fdw
-- server here and that its database can hold a server's partitions: it
-- answers, has a pgsentinel with repository nodes, is a primary, and is
-- not this database (its foreign tables would point to themselves).  With
-- a server id, also that the node holds no partition of that id: it would
-- be another repository's (a repository installed anew numbers its servers
-- from 1 again).
CREATE FUNCTION pgsentinel_fleet_node_schema(node name, server integer DEFAULT NULL)
RETURNS name
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dbl name;
    probe record;
    taken boolean;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_foreign_server f
                     JOIN pg_foreign_data_wrapper w ON w.oid = f.srvfdw
                    WHERE f.srvname = node AND w.fdwname = 'postgres_fdw') THEN
        RAISE EXCEPTION 'no postgres_fdw server "%" for the repository node', node
            USING ERRCODE = 'undefined_object',
                  HINT = format('Create it first: CREATE SERVER %1$I FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host ''...'', dbname ''...'', connect_timeout ''10''); CREATE USER MAPPING FOR PUBLIC SERVER %1$I OPTIONS (user ''...'');', node);
    END IF;
    -- a node that does not answer must fail the tick, not hold it
    IF NOT EXISTS (SELECT FROM pg_foreign_server f, pg_options_to_table(f.srvoptions) o
                    WHERE f.srvname = node AND o.option_name = 'connect_timeout') THEN
        RAISE EXCEPTION 'the server of repository node "%" has no connect_timeout', node
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = format('An unreachable node would hold every call for the system''s TCP timeout: ALTER SERVER %I OPTIONS (ADD connect_timeout ''10'');', node);
    END IF;
    SELECT @extschema@.pgsentinel_fleet_needs('dblink'::pg_catalog.name) INTO dbl;
    BEGIN
        EXECUTE format($q$
            SELECT * FROM %I.dblink($1, $r$
                SELECT n.nspname::pg_catalog.text,
                       pg_catalog.to_regprocedure(pg_catalog.quote_ident(n.nspname)
                           OPERATOR(pg_catalog.||) '.pgsentinel_fleet_expire(integer, interval, interval, interval)') IS NOT NULL,
                       pg_catalog.pg_is_in_recovery(),
                       CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')
                            THEN (SELECT c.system_identifier FROM pg_catalog.pg_control_system() c)::pg_catalog.text
                       END,
                       pg_catalog.current_database()::pg_catalog.text
                  FROM pg_catalog.pg_extension e
                  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
                 WHERE e.extname OPERATOR(pg_catalog.=) 'pgsentinel'
                UNION ALL
                SELECT NULL, NULL, NULL, NULL, NULL
                 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_extension e
                                    WHERE e.extname OPERATOR(pg_catalog.=) 'pgsentinel')
            $r$) AS t(schema text, nodes boolean, standby boolean, sysid text, db text)$q$, dbl)
            INTO probe USING node;
    EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception THEN
        RAISE EXCEPTION 'cannot connect to repository node "%": %', node, SQLERRM
            USING ERRCODE = 'connection_exception',
                  HINT = format('Check the options of server %1$I and its user mapping (ALTER SERVER %1$I OPTIONS (SET host ''...'')), and that the node accepts connections from here.', node);
    END;
    IF probe.schema IS NULL THEN
        RAISE EXCEPTION 'pgsentinel is not installed in the database of repository node "%"', node
            USING ERRCODE = 'undefined_object',
                  HINT = 'Run CREATE EXTENSION pgsentinel there (preloading it there is not needed).';
    END IF;
    IF NOT probe.nodes THEN
        RAISE EXCEPTION 'pgsentinel on repository node "%" is too old to hold fleet servers', node
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run ALTER EXTENSION pgsentinel UPDATE there.';
    END IF;
    IF probe.standby THEN
        RAISE EXCEPTION 'repository node "%" is a standby', node
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Point the server at the node''s primary.';
    END IF;
    IF probe.sysid = (SELECT c.system_identifier FROM pg_control_system() c)::text
       AND probe.db = current_database() THEN
        RAISE EXCEPTION 'repository node "%" is this database', node
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Leave node out to keep the server''s partitions here.';
    END IF;
    IF server IS NOT NULL THEN
        EXECUTE format($q$SELECT * FROM %I.dblink($1, $r$
                           SELECT EXISTS (SELECT FROM pg_catalog.pg_class c
                                           WHERE c.relnamespace OPERATOR(pg_catalog.=) %L::pg_catalog.regnamespace
                                             AND c.relname OPERATOR(pg_catalog.~) %L)$r$) AS t(taken boolean)$q$,
                       dbl, quote_ident(probe.schema), '^pgsentinel_fleet_[a-z_]+_' || server::text || '(_[0-9]+)?$')
            INTO taken USING node;
        IF taken THEN
            RAISE EXCEPTION 'repository node "%" already holds partitions of fleet server id %', node, server
                USING ERRCODE = 'duplicate_table',
                      DETAIL = 'They belong to no server of this repository: another repository, or an earlier installation of this one, made them.',
                      HINT = format('Drop them there if nothing needs them (DROP TABLE pgsentinel_fleet_batch_%s and the other tables named pgsentinel_fleet_*_%s), or call again: the next call takes the next server id.', server, server);
        END IF;
    END IF;
    RETURN probe.schema;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_node_schema(name, integer) FROM PUBLIC;

-- Place a new server's partitions on a node (checked by
-- pgsentinel_fleet_node_schema(node, server) first): there, its partition
-- of every fleet table and their days from first_day to a week ahead (the
-- node's pgsentinel_fleet_partitions()); here, foreign partitions of the
-- fleet tables over them (made apart, then attached, as the local ones
-- are: ATTACH PARTITION does not wait for the inserts into the parents).
CREATE FUNCTION pgsentinel_fleet_node_place(server integer, node name, first_day date)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
-- (dates and intervals are sent as text: in styles any node reads alike)
SET DateStyle = 'ISO, YMD'
SET IntervalStyle = 'postgres'
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    ns name;
    dbl name;
    t text;
    p text;
    cols text;
BEGIN
    SELECT @extschema@.pgsentinel_fleet_node_schema(node::pg_catalog.name, NULL::pg_catalog.int4) INTO ns;
    SELECT @extschema@.pgsentinel_fleet_needs('dblink'::pg_catalog.name) INTO dbl;
    FOR t IN EXECUTE format('SELECT x.parent FROM %I.pgsentinel_fleet_partitioned() x ORDER BY x.parent', s) LOOP
        p := t || '_' || server::text;
        IF to_regclass(format('%I.%I', s, p)) IS NOT NULL THEN
            RAISE EXCEPTION 'relation "%.%" exists already', s, p
                USING ERRCODE = 'duplicate_table',
                      DETAIL = 'The partitions of a server placed on a node are foreign tables made here by pgsentinel_fleet_add().',
                      HINT = 'Keep what it holds elsewhere, drop or rename it, then call again.';
        END IF;
    END LOOP;
    -- there, the check that the id is free and the making in one
    -- transaction, under a lock of the node's fleet table (the one its
    -- partitions' ATTACH takes; no role without rights on that table can
    -- hold it): another repository placing a server at the same moment
    -- waits, then finds these (the DO's body as a quoted literal:
    -- whatever the names hold)
    EXECUTE format('SELECT %I.dblink_exec($1, $2)', dbl)
        USING node, format($r$SET statement_timeout = '60s'; SET lock_timeout = '10s'; DO %s$r$,
                           quote_literal(format($b$BEGIN
                LOCK TABLE ONLY %1$I.pgsentinel_fleet_batch IN SHARE UPDATE EXCLUSIVE MODE;
                IF EXISTS (SELECT FROM pg_catalog.pg_class c
                            WHERE c.relnamespace OPERATOR(pg_catalog.=) %3$L::pg_catalog.regnamespace
                              AND c.relname OPERATOR(pg_catalog.~) %4$L) THEN
                    RAISE EXCEPTION 'this repository node already holds partitions of fleet server id %2$s'
                        USING ERRCODE = 'duplicate_table',
                              HINT = 'Another repository placed a server of this id here meanwhile: call pgsentinel_fleet_add() again, the next call takes the next server id.';
                END IF;
                PERFORM %1$I.pgsentinel_fleet_partitions(%2$s, %5$L::pg_catalog.date, %6$L::pg_catalog.date);
            END$b$,
            ns, server, quote_ident(ns), '^pgsentinel_fleet_[a-z_]+_' || server::text || '(_[0-9]+)?$',
            first_day, (timezone('UTC', now()))::date + 7)));
    -- here, the foreign partitions over them: what was made there is
    -- dropped again if this fails
    BEGIN
    FOR t IN EXECUTE format('SELECT x.parent FROM %I.pgsentinel_fleet_partitioned() x ORDER BY x.parent', s) LOOP
        p := t || '_' || server::text;
        SELECT string_agg(format('%I %s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                                 CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END),
                          ', ' ORDER BY a.attnum)
          INTO cols
          FROM pg_attribute a
         WHERE a.attrelid = to_regclass(format('%I.%I', s, t)) AND a.attnum > 0
           AND NOT a.attisdropped;
        EXECUTE format('CREATE FOREIGN TABLE %I.%I (%s) SERVER %I
                          OPTIONS (schema_name %L, table_name %L, async_capable ''true'')',
                       s, p, cols, node, ns, p);
        EXECUTE format('REVOKE ALL ON %I.%I FROM PUBLIC', s, p);
        EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES IN (%s)',
                       s, t, s, p, server);
    END LOOP;
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        BEGIN
            PERFORM @extschema@.pgsentinel_fleet_node_drop(server::pg_catalog.int4, node::pg_catalog.name);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'the partitions of fleet server id % are left on repository node "%": %', server, node, SQLERRM
                USING HINT = format('Drop them there: the tables named pgsentinel_fleet_*_%s.', server);
        END;
        RAISE;
    END;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_node_place(integer, name, date) FROM PUBLIC;

-- Drop a server's partitions on its node (pgsentinel_fleet_remove() without
-- keep_history; pgsentinel_fleet_add() undoing a placement that failed).
-- Not in a transaction that read or wrote them: postgres_fdw holds their
-- locks there until it ends.
CREATE FUNCTION pgsentinel_fleet_node_drop(server integer, node name)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    ns name;
    dbl name;
    names text;
BEGIN
    SELECT @extschema@.pgsentinel_fleet_node_schema(node::pg_catalog.name, NULL::pg_catalog.int4) INTO ns;
    SELECT @extschema@.pgsentinel_fleet_needs('dblink'::pg_catalog.name) INTO dbl;
    EXECUTE format('SELECT string_agg(format(''%%I.%%I'', $1, x.parent || ''_'' || $2), '', '' ORDER BY x.parent)
                      FROM %I.pgsentinel_fleet_partitioned() x', s)
        INTO names USING ns, server::text;
    -- (this transaction may hold locks on them there, through postgres_fdw's
    -- connection: the drop fails after a while instead of waiting for ever)
    EXECUTE format('SELECT %I.dblink_exec($1, $2)', dbl)
        USING node, 'SET statement_timeout = ''60s''; SET lock_timeout = ''10s''; DROP TABLE IF EXISTS ' || names;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_node_drop(integer, name) FROM PUBLIC;

-- The drops a node owes: the partitions of a server removed without its
-- history that its node could not drop then (down, its locks held).  The
-- server is gone from this repository; pgsentinel_fleet_node_keep() drops
-- them there again, every ten minutes, until it can.  Kept by pg_dump with
-- the list of servers.
CREATE TABLE pgsentinel_fleet_pending_drop (
    node name NOT NULL,
    server_id integer NOT NULL,
    due timestamptz NOT NULL DEFAULT pg_catalog.now(),
    last_error text,
    PRIMARY KEY (node, server_id)
);
REVOKE ALL ON pgsentinel_fleet_pending_drop FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('pgsentinel_fleet_pending_drop', '');

-- Keep the days of the servers on other nodes: every ten minutes for each
-- node, the days of its servers from two days ago (or their newest sample
-- there, if older) to a week ahead, and the drop of their days past
-- retention (the node's pgsentinel_fleet_expire()), in one statement sent
-- there.  A day that rows were being written to through the node's
-- parent (a subscription's apply, a roll) is not dropped then: the next
-- pass drops it.  A node that fails is tried again ten minutes later too,
-- its error in its servers' last_error; the other nodes go on.  No node
-- is begun once budget has passed (the first always is): the archiver
-- calls it in a transaction of its own under a deadline of five minutes,
-- whose cancel would roll back every node's new due time with it, and
-- each node takes at most its connect_timeout and its statement's 60 s;
-- the nodes left are due at the next tick.  The transaction is the
-- archiver's own, before the tick: no pull has locked the node's tables
-- through postgres_fdw then, which the drops would have to wait for.
-- Then the drops the nodes owe (pgsentinel_fleet_pending_drop), those due.
-- Returns the nodes kept.
CREATE FUNCTION pgsentinel_fleet_node_keep(budget interval DEFAULT '2 minutes')
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
-- (dates and intervals are sent as text: in styles any node reads alike)
SET DateStyle = 'ISO, YMD'
SET IntervalStyle = 'postgres'
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    ns name;
    dbl name;
    n record;
    d record;
    id integer;
    kept integer := 0;
    started timestamptz := clock_timestamp();
    tried integer := 0;
    today date := timezone('UTC', now())::date;
BEGIN
    FOR n IN EXECUTE format('SELECT v.node, array_agg(v.server_id ORDER BY v.server_id) AS ids,
                                    array_agg(v.retention ORDER BY v.server_id) AS raw,
                                    array_agg(v.minute_retention ORDER BY v.server_id) AS minute,
                                    array_agg(v.hour_retention ORDER BY v.server_id) AS hour
                               FROM %I.pgsentinel_fleet_server v
                              WHERE v.node IS NOT NULL
                              GROUP BY v.node
                             HAVING bool_or(v.node_due IS NULL OR v.node_due <= now())
                              ORDER BY v.node', s) LOOP
        EXIT WHEN tried > 0 AND clock_timestamp() > started + budget;
        tried := tried + 1;
        BEGIN
            SELECT @extschema@.pgsentinel_fleet_node_schema(n.node::pg_catalog.name, NULL::pg_catalog.int4) INTO ns;
            SELECT @extschema@.pgsentinel_fleet_needs('dblink'::pg_catalog.name) INTO dbl;
            -- one statement there (a DO: dblink_exec takes no rows back),
            -- bounded in time; a day from the server's
            -- newest sample there on (a node back from a long outage gets
            -- the days its sources' backlog fills), within its retention
            EXECUTE format('SELECT %I.dblink_exec($1, $2)', dbl)
                USING n.node, format($r$SET statement_timeout = '60s'; SET lock_timeout = '10s'; DO %s$r$,
                                     quote_literal(format($b$DECLARE srv record; newest pg_catalog.date; BEGIN
                -- (the newest day read in a statement of its own: a table
                -- that one reads cannot be attached to in the same one)
                FOR srv IN SELECT * FROM ROWS FROM (pg_catalog.unnest(%1$L::pg_catalog.int4[]),
                                                    pg_catalog.unnest(%2$L::pg_catalog.interval[])) AS v(id, r) LOOP
                    SELECT pg_catalog.timezone('UTC', y.last_time)::pg_catalog.date INTO newest
                      FROM %5$I.pgsentinel_fleet_batch y
                     WHERE y.server_id OPERATOR(pg_catalog.=) srv.id
                     ORDER BY y.first_time DESC LIMIT 1;
                    PERFORM %5$I.pgsentinel_fleet_partitions(srv.id,
                                GREATEST(LEAST(%6$L::pg_catalog.date, newest),
                                         pg_catalog.timezone('UTC', pg_catalog.now() OPERATOR(pg_catalog.-) srv.r)::pg_catalog.date),
                                %7$L::pg_catalog.date);
                END LOOP;
                -- (a statement of its own: a table the one above read
                -- cannot be dropped in the same statement)
                PERFORM %5$I.pgsentinel_fleet_expire(x.id, x.r, x.m, x.h)
                   FROM ROWS FROM (pg_catalog.unnest(%1$L::pg_catalog.int4[]),
                                   pg_catalog.unnest(%2$L::pg_catalog.interval[]),
                                   pg_catalog.unnest(%3$L::pg_catalog.interval[]),
                                   pg_catalog.unnest(%4$L::pg_catalog.interval[])) AS x(id, r, m, h);
                END$b$,
                    n.ids, n.raw, n.minute, n.hour, ns, today - 2, today + 7)));
            EXECUTE format('UPDATE %I.pgsentinel_fleet_server
                               SET node_due = now() + interval ''10 minutes'',
                                   last_error = CASE WHEN last_error LIKE ''node:%%'' THEN NULL ELSE last_error END
                             WHERE node = $1', s)
                USING n.node;
            kept := kept + 1;
        EXCEPTION WHEN OTHERS THEN
            EXECUTE format('UPDATE %I.pgsentinel_fleet_server
                               SET node_due = now() + interval ''10 minutes'', last_error = $2
                             WHERE node = $1', s)
                USING n.node, 'node: ' || SQLERRM;
        END;
    END LOOP;
    -- the drops the nodes owe: a node at a time, given up at its first
    -- failure (a node down costs one connect_timeout a pass, whatever it
    -- owes), none begun after a minute; a node whose foreign server is
    -- gone here is given up for good, with a warning
    FOR d IN EXECUTE format('SELECT x.node, array_agg(x.server_id ORDER BY x.server_id) AS ids
                               FROM %I.pgsentinel_fleet_pending_drop x
                              WHERE x.due <= now() GROUP BY x.node ORDER BY x.node', s) LOOP
        EXIT WHEN clock_timestamp() > started + interval '1 minute';
        IF NOT EXISTS (SELECT FROM pg_foreign_server f WHERE f.srvname = d.node) THEN
            RAISE WARNING 'the partitions of fleet server ids % are left on repository node "%": its foreign server is gone', d.ids, d.node
                USING HINT = 'Drop the tables named pgsentinel_fleet_*_<id> there by hand.';
            EXECUTE format('DELETE FROM %I.pgsentinel_fleet_pending_drop WHERE node = $1', s)
                USING d.node;
            CONTINUE;
        END IF;
        BEGIN
            FOREACH id IN ARRAY d.ids LOOP
                PERFORM @extschema@.pgsentinel_fleet_node_drop(id::pg_catalog.int4, d.node::pg_catalog.name);
                EXECUTE format('DELETE FROM %I.pgsentinel_fleet_pending_drop WHERE node = $1 AND server_id = $2', s)
                    USING d.node, id;
            END LOOP;
        EXCEPTION WHEN OTHERS THEN
            EXECUTE format('UPDATE %I.pgsentinel_fleet_pending_drop
                               SET due = now() + interval ''10 minutes'', last_error = $2
                             WHERE node = $1 AND due <= now()', s)
                USING d.node, SQLERRM;
        END;
    END LOOP;
    RETURN kept;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_node_keep(interval) FROM PUBLIC;
