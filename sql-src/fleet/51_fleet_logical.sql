
-- The fleet's logical transport (docs/fleet.md).  On a source (a primary),
-- one publication of the archive tables, inserts only, as their root
-- tables: the retention's DROPs and the rollups' upserts are not sent.  On
-- the repository, a subscription applies those inserts to the same-named
-- tables of the repository's own installation, where a trigger that fires
-- only in replica sessions (the apply and table copy workers) moves each
-- row to the fleet tables of the subscription's server and drops it from
-- the archive table.  The repository's own archiver (an ordinary session)
-- never fires it.

-- On a source: create the publication pgsentinel_fleet if missing, add to
-- it those of the archive tables it lacks (a publication made before the
-- statements history travelled has only the samples' tables), and return
-- its name.  The caller must own the archive tables (the role that created
-- the extension, or a superuser).
CREATE FUNCTION pgsentinel_fleet_publish()
RETURNS name
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    t text;
BEGIN
    IF current_setting('wal_level') <> 'logical' THEN
        RAISE EXCEPTION 'wal_level is "%" on this server: logical replication needs "logical"',
                        current_setting('wal_level')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run ALTER SYSTEM SET wal_level = logical and restart this server, or add it to the fleet with method => ''pull''.';
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION 'this server is a standby: it cannot publish'
            USING ERRCODE = 'read_only_sql_transaction',
                  HINT = 'Add a standby to the fleet with method => ''pull''.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_publication WHERE pubname = 'pgsentinel_fleet') THEN
        EXECUTE format('CREATE PUBLICATION pgsentinel_fleet FOR TABLE %1$I.pgsentinel_archive_batch, '
                       '%1$I.pgsentinel_archive_session, %1$I.pgsentinel_archive_text, '
                       '%1$I.pgsentinel_archive_wait_event, %1$I.pgsentinel_archive_statement_batch, '
                       '%1$I.pgsentinel_archive_statement_text '
                       'WITH (publish = ''insert'', publish_via_partition_root = true)', s);
    END IF;
    FOREACH t IN ARRAY ARRAY['pgsentinel_archive_batch', 'pgsentinel_archive_session',
                             'pgsentinel_archive_text', 'pgsentinel_archive_wait_event',
                             'pgsentinel_archive_statement_batch', 'pgsentinel_archive_statement_text'] LOOP
        IF NOT EXISTS (SELECT FROM pg_publication_rel r
                         JOIN pg_publication p ON p.oid = r.prpubid
                        WHERE p.pubname = 'pgsentinel_fleet'
                          AND r.prrelid = to_regclass(format('%I.%I', s, t))) THEN
            EXECUTE format('ALTER PUBLICATION pgsentinel_fleet ADD TABLE %I.%I', s, t);
        END IF;
    END LOOP;
    RETURN 'pgsentinel_fleet';
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_publish() FROM PUBLIC;

-- The trigger on the archive tables: in a replica session whose backend
-- is the apply or table copy worker of a fleet subscription, insert the
-- row into the fleet table of the subscription's server (skipping what is
-- already there) and drop it; otherwise let it through.  TG_ARGV[0] names
-- the table (the trigger fires on its partitions, whose names vary).  The
-- server is looked up at each row, not cached for the session: a
-- subscription removed and added again is another feed, and the lookup
-- (pg_stat_subscription by pid, the server by feed) is cheap next to the
-- insert it guards.  The partitions of a server on another repository
-- node are made there by the tick (56_fleet_nodes.sql), not here.
CREATE FUNCTION pgsentinel_fleet_redirect()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    srv integer;
    fd bigint;
    after timestamptz;
    stmt_after timestamptz;
    here boolean;
    too_old date;
    d date;
BEGIN
    EXECUTE format('SELECT f.server_id, f.feed, f.accept_after,
                           GREATEST(f.accept_after, f.statements_pulled_until),
                           f.node IS NULL,
                           CASE WHEN f.node IS NOT NULL
                                THEN pg_catalog.timezone(''UTC'', pg_catalog.now() OPERATOR(pg_catalog.-) f.retention)::pg_catalog.date
                           END
                      FROM %I.pgsentinel_fleet_server f
                      JOIN pg_catalog.pg_stat_subscription p ON p.subid OPERATOR(pg_catalog.=) f.feed::pg_catalog.oid
                     WHERE p.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()
                       AND f.method OPERATOR(pg_catalog.=) ''logical''
                     LIMIT 1', s)
        INTO srv, fd, after, stmt_after, here, too_old;
    IF srv IS NULL THEN
        RETURN NEW;
    END IF;
    -- a row of a server on another node for a day past its retention (an
    -- initial copy brings the source's whole archive): that day is not
    -- made there, and the row would be dropped with it anyway
    -- (each branch names only the columns of its table)
    IF too_old IS NOT NULL THEN
        IF TG_ARGV[0] = 'batch' THEN
            d := timezone('UTC', NEW.first_time)::date;
        ELSIF TG_ARGV[0] = 'statement_batch' THEN
            d := timezone('UTC', NEW.first_time)::date;
        ELSIF TG_ARGV[0] <> 'wait_event' THEN
            d := NEW.day;
        END IF;
        IF d < too_old THEN
            RETURN NULL;
        END IF;
    END IF;
    -- (of a batch that ends after accept_after, the samples after it)
    IF TG_ARGV[0] = 'batch' THEN
        IF NEW.last_time <= after THEN
            RETURN NULL;
        END IF;
        d := timezone('UTC', NEW.first_time)::date;
        IF here AND to_regclass(format('%I.%I', s, 'pgsentinel_fleet_batch_' || srv || '_' || to_char(d, 'YYYYMMDD'))) IS NULL THEN
            PERFORM @extschema@.pgsentinel_fleet_partitions(srv, d, d);
        END IF;
        -- (a payload this version cannot read is refused here, with the
        -- reason, not stored to fail its readers)
        PERFORM @extschema@.pgsentinel_batch_format(NEW.row_data, 'rows'::pg_catalog.text);
        IF NEW.sample_data IS NULL OR NEW.row_data IS NULL THEN
            RAISE EXCEPTION 'fleet server "%" sent a batch without its samples or rows', srv
                USING ERRCODE = 'data_corrupted',
                      HINT = 'A source''s batches are written by its archiver: make the source''s pgsentinel the repository''s version.';
        END IF;
        PERFORM @extschema@.pgsentinel_batch_format(NEW.sample_data, 'samples'::pg_catalog.text);
        IF NEW.first_time <= after THEN
            -- the batch less its samples up to accept_after, and their
            -- rows (first_time stays: the times are counted from it)
            EXECUTE format($q$
                WITH a AS (
                  SELECT * FROM %1$I.pgsentinel_batch_samples(($3).sample_data)
                ), k AS (
                  SELECT x.si, (row_number() OVER (ORDER BY x.si))::int4 AS nsi
                    FROM a, unnest(a.sample_us) WITH ORDINALITY AS x(us, si)
                   WHERE %1$I.pgsentinel_us_after(($3).first_time, x.us) > $4)
                INSERT INTO %1$I.pgsentinel_fleet_batch (server_id, feed, first_time,
                         last_time, sample_data, row_data)
                  SELECT $1, $2, ($3).first_time, ($3).last_time,
                         %1$I.pgsentinel_sample_pack(
                           (SELECT array_agg(x.v ORDER BY x.si) FROM a, unnest(a.sample_ids) WITH ORDINALITY AS x(v, si) WHERE x.si IN (SELECT k.si FROM k)),
                           (SELECT array_agg(x.v ORDER BY x.si) FROM a, unnest(a.sample_us) WITH ORDINALITY AS x(v, si) WHERE x.si IN (SELECT k.si FROM k)),
                           (SELECT array_agg(x.v ORDER BY x.si) FROM a, unnest(a.sample_periods) WITH ORDINALITY AS x(v, si) WHERE x.si IN (SELECT k.si FROM k)),
                           (SELECT array_agg(x.v ORDER BY x.si) FROM a, unnest(a.weights) WITH ORDINALITY AS x(v, si) WHERE x.si IN (SELECT k.si FROM k)),
                           (SELECT array_agg(x.v ORDER BY x.si) FROM a, unnest(a.active_sessions) WITH ORDINALITY AS x(v, si) WHERE x.si IN (SELECT k.si FROM k)),
                           (SELECT array_agg(x.v ORDER BY x.si) FROM a, unnest(a.sample_blocked) WITH ORDINALITY AS x(v, si) WHERE x.si IN (SELECT k.si FROM k))),
                         %1$I.pgsentinel_batch_keep(($3).row_data,
                           coalesce((SELECT array_agg(k2.nsi ORDER BY x.si)
                                       FROM a, generate_series(1, cardinality(a.sample_us)) AS x(si)
                                       LEFT JOIN k k2 ON k2.si = x.si), '{}'::int4[]))
                   WHERE EXISTS (SELECT FROM k)
                ON CONFLICT DO NOTHING$q$, s)
                USING srv, fd, NEW, after;
        ELSE
            EXECUTE format('INSERT INTO %I.pgsentinel_fleet_batch
                              SELECT $1, $2, ($3).*
                            ON CONFLICT DO NOTHING', s)
                USING srv, fd, NEW;
        END IF;
    ELSIF TG_ARGV[0] = 'session' THEN
        IF here AND to_regclass(format('%I.%I', s, 'pgsentinel_fleet_' || TG_ARGV[0] || '_' || srv || '_' || to_char(NEW.day, 'YYYYMMDD'))) IS NULL THEN
            PERFORM @extschema@.pgsentinel_fleet_partitions(srv, NEW.day, NEW.day);
        END IF;
        EXECUTE format('INSERT INTO %I.%I
                          SELECT $1, $2, ($3).*
                        ON CONFLICT DO NOTHING', s, 'pgsentinel_fleet_' || TG_ARGV[0])
            USING srv, fd, NEW;
    ELSIF TG_ARGV[0] = 'text' THEN
        IF here AND to_regclass(format('%I.%I', s, 'pgsentinel_fleet_text_' || srv || '_' || to_char(NEW.day, 'YYYYMMDD'))) IS NULL THEN
            PERFORM @extschema@.pgsentinel_fleet_partitions(srv, NEW.day, NEW.day);
        END IF;
        EXECUTE format('INSERT INTO %I.pgsentinel_fleet_text
                          SELECT $1, $2, ($3).day, ($3).text_id, ($3).hash, ($3).text
                        ON CONFLICT DO NOTHING', s)
            USING srv, fd, NEW;
    ELSIF TG_ARGV[0] = 'wait_event' THEN
        IF here AND to_regclass(format('%I.%I', s, 'pgsentinel_fleet_wait_event_' || srv)) IS NULL THEN
            PERFORM @extschema@.pgsentinel_fleet_partitions(srv, NULL::pg_catalog.date, NULL::pg_catalog.date);
        END IF;
        EXECUTE format('INSERT INTO %I.pgsentinel_fleet_wait_event
                          SELECT $1, $2, ($3).wait_event_id, ($3).wait_event_type,
                                 ($3).wait_event
                        ON CONFLICT DO NOTHING', s)
            USING srv, fd, NEW;
    ELSIF TG_ARGV[0] = 'statement_batch' THEN
        -- (of a batch that ends after accept_after, the readings after it,
        -- and after the last reading a pull took before: a server switched
        -- from pull to logical has its readings pulled past accept_after,
        -- the newest sample, when keep_one_in > 1)
        IF NEW.last_time <= stmt_after THEN
            RETURN NULL;
        END IF;
        d := timezone('UTC', NEW.first_time)::date;
        IF here AND to_regclass(format('%I.%I', s, 'pgsentinel_fleet_statement_batch_' || srv || '_' || to_char(d, 'YYYYMMDD'))) IS NULL THEN
            PERFORM @extschema@.pgsentinel_fleet_partitions(srv, d, d);
        END IF;
        PERFORM @extschema@.pgsentinel_batch_format(NEW.row_data, 'statements'::pg_catalog.text);
        IF NEW.first_time <= stmt_after THEN
            -- (first_time stays: the times are counted from it)
            EXECUTE format($q$
                INSERT INTO %1$I.pgsentinel_fleet_statement_batch (server_id, feed,
                         first_time, last_time, row_data)
                  SELECT $1, $2, ($3).first_time, ($3).last_time,
                         %1$I.pgsentinel_statement_batch_keep(($3).first_time,
                                                              ($3).row_data, $4)
                ON CONFLICT DO NOTHING$q$, s)
                USING srv, fd, NEW, stmt_after;
        ELSE
            EXECUTE format('INSERT INTO %I.pgsentinel_fleet_statement_batch
                              SELECT $1, $2, ($3).*
                            ON CONFLICT DO NOTHING', s)
                USING srv, fd, NEW;
        END IF;
    ELSIF TG_ARGV[0] = 'statement_text' THEN
        IF here AND to_regclass(format('%I.%I', s, 'pgsentinel_fleet_statement_text_' || srv || '_' || to_char(NEW.day, 'YYYYMMDD'))) IS NULL THEN
            PERFORM @extschema@.pgsentinel_fleet_partitions(srv, NEW.day, NEW.day);
        END IF;
        EXECUTE format('INSERT INTO %I.pgsentinel_fleet_statement_text
                          SELECT $1, $2, ($3).day, ($3).queryid, ($3).dbid,
                                 ($3).userid, ($3).text_id
                        ON CONFLICT DO NOTHING', s)
            USING srv, fd, NEW;
    END IF;
    RETURN NULL;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_redirect() FROM PUBLIC;

-- The triggers, on the parents (PostgreSQL clones them to every partition,
-- those created later too), fired in replica sessions only.
CREATE TRIGGER pgsentinel_fleet_redirect BEFORE INSERT ON pgsentinel_archive_batch
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_redirect('batch');
CREATE TRIGGER pgsentinel_fleet_redirect BEFORE INSERT ON pgsentinel_archive_session
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_redirect('session');
CREATE TRIGGER pgsentinel_fleet_redirect BEFORE INSERT ON pgsentinel_archive_text
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_redirect('text');
CREATE TRIGGER pgsentinel_fleet_redirect BEFORE INSERT ON pgsentinel_archive_wait_event
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_redirect('wait_event');
CREATE TRIGGER pgsentinel_fleet_redirect BEFORE INSERT ON pgsentinel_archive_statement_batch
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_redirect('statement_batch');
CREATE TRIGGER pgsentinel_fleet_redirect BEFORE INSERT ON pgsentinel_archive_statement_text
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_redirect('statement_text');
ALTER TABLE pgsentinel_archive_batch ENABLE REPLICA TRIGGER pgsentinel_fleet_redirect;
ALTER TABLE pgsentinel_archive_session ENABLE REPLICA TRIGGER pgsentinel_fleet_redirect;
ALTER TABLE pgsentinel_archive_text ENABLE REPLICA TRIGGER pgsentinel_fleet_redirect;
ALTER TABLE pgsentinel_archive_wait_event ENABLE REPLICA TRIGGER pgsentinel_fleet_redirect;
ALTER TABLE pgsentinel_archive_statement_batch ENABLE REPLICA TRIGGER pgsentinel_fleet_redirect;
ALTER TABLE pgsentinel_archive_statement_text ENABLE REPLICA TRIGGER pgsentinel_fleet_redirect;

-- A source adds its own rows and nothing else.  Its publication is its
-- own to change: published with updates, deletes or truncates, it would
-- have the repository's apply worker change or empty the repository's own
-- archive (the same tables, where the redirect sees only inserts).  In a
-- fleet subscription's worker, an UPDATE or DELETE of an archive table is
-- skipped with a warning, and a TRUNCATE is refused: the subscription
-- stops at it until it is skipped there (the error says how).  Any other
-- session, replica or not, goes through.
CREATE FUNCTION pgsentinel_fleet_refuse()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    srv text;
    sub name;
BEGIN
    EXECUTE format('SELECT f.name, f.subscription
                      FROM %I.pgsentinel_fleet_server f
                      JOIN pg_catalog.pg_stat_subscription p ON p.subid OPERATOR(pg_catalog.=) f.feed::pg_catalog.oid
                     WHERE p.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()
                     LIMIT 1', s)
        INTO srv, sub;
    IF srv IS NULL THEN
        RETURN CASE TG_OP WHEN 'DELETE' THEN OLD WHEN 'UPDATE' THEN NEW END;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'fleet server "%" sent a TRUNCATE of %: a source may only add rows', srv, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('On the source: ALTER PUBLICATION pgsentinel_fleet SET (publish = ''insert''); here: ALTER SUBSCRIPTION %I SKIP (lsn => ...) with the LSN the worker''s log gives for this transaction.', sub);
    END IF;
    RAISE WARNING 'fleet server "%" sent an % of %: ignored, a source may only add rows', srv, TG_OP, TG_TABLE_NAME
        USING HINT = 'On the source: ALTER PUBLICATION pgsentinel_fleet SET (publish = ''insert'').';
    RETURN NULL;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_refuse() FROM PUBLIC;
CREATE TRIGGER pgsentinel_fleet_refuse BEFORE UPDATE OR DELETE ON pgsentinel_archive_batch
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse_truncate BEFORE TRUNCATE ON pgsentinel_archive_batch
    FOR EACH STATEMENT EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse BEFORE UPDATE OR DELETE ON pgsentinel_archive_session
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse_truncate BEFORE TRUNCATE ON pgsentinel_archive_session
    FOR EACH STATEMENT EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse BEFORE UPDATE OR DELETE ON pgsentinel_archive_text
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse_truncate BEFORE TRUNCATE ON pgsentinel_archive_text
    FOR EACH STATEMENT EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse BEFORE UPDATE OR DELETE ON pgsentinel_archive_wait_event
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse_truncate BEFORE TRUNCATE ON pgsentinel_archive_wait_event
    FOR EACH STATEMENT EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse BEFORE UPDATE OR DELETE ON pgsentinel_archive_statement_batch
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse_truncate BEFORE TRUNCATE ON pgsentinel_archive_statement_batch
    FOR EACH STATEMENT EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse BEFORE UPDATE OR DELETE ON pgsentinel_archive_statement_text
    FOR EACH ROW EXECUTE FUNCTION pgsentinel_fleet_refuse();
CREATE TRIGGER pgsentinel_fleet_refuse_truncate BEFORE TRUNCATE ON pgsentinel_archive_statement_text
    FOR EACH STATEMENT EXECUTE FUNCTION pgsentinel_fleet_refuse();
ALTER TABLE pgsentinel_archive_batch ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse;
ALTER TABLE pgsentinel_archive_batch ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse_truncate;
ALTER TABLE pgsentinel_archive_session ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse;
ALTER TABLE pgsentinel_archive_session ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse_truncate;
ALTER TABLE pgsentinel_archive_text ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse;
ALTER TABLE pgsentinel_archive_text ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse_truncate;
ALTER TABLE pgsentinel_archive_wait_event ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse;
ALTER TABLE pgsentinel_archive_wait_event ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse_truncate;
ALTER TABLE pgsentinel_archive_statement_batch ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse;
ALTER TABLE pgsentinel_archive_statement_batch ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse_truncate;
ALTER TABLE pgsentinel_archive_statement_text ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse;
ALTER TABLE pgsentinel_archive_statement_text ENABLE REPLICA TRIGGER pgsentinel_fleet_refuse_truncate;

-- The ring's samples as a relation, so that a repository can read them
-- through postgres_fdw (the pull transport, 52_fleet_admin.sql).
CREATE VIEW pgsentinel_ring_samples AS
SELECT p.sample_id, p.sample_time, p.sample_period, p.active_sessions
  FROM pgsentinel_samples() p;
GRANT SELECT ON pgsentinel_ring_samples TO PUBLIC;
