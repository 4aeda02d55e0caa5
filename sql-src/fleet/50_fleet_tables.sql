
-- The fleet (docs/fleet.md): a repository database keeps the archives of
-- many servers, each row tagged with its server.  These tables exist in
-- every installation and stay empty unless pgsentinel_fleet_add() is
-- called there.  They are granted to nobody; the fleet views read them
-- with their owner's rights, for pg_read_all_stats.
--
-- Identity: a batch of samples is (server_id, first_time), unique, and
-- every insert skips a batch already there, so that a copy made twice
-- (the initial copy of a new subscription after a failover, whose source
-- holds the same archive) never doubles a sample; a pull moves its
-- watermark with what it stores.  The sessions, texts and wait events a
-- batch's arrays point to are numbered by their feed: the subscription
-- that copied them (its OID), or 0 for what the repository pulled and
-- numbered itself.  A new feed after a failover numbers its sessions
-- afresh without clashing with what the old one copied.
--
-- Columns: each table's are its archive table's (LIKE), after server_id
-- and feed: a server's rows are stored as its own archive stored them,
-- with their storage (INCLUDING STORAGE, here and in every partition: a
-- batch's row_data is a zstd payload that TOAST must not compress again).
--
-- Partitions: by server (LIST), then by day (RANGE), so that one server's
-- history is dropped or kept on its own.  The repository creates them
-- when rows arrive (pgsentinel_fleet_partitions()) and drops the days
-- past each server's retention (pgsentinel_fleet_tick()).  The keys are
-- those of each server's partition, not of the parents: a server's
-- partition may be a foreign table on another repository node
-- (postgres_fdw), which a parent with a unique index would refuse.

CREATE TABLE pgsentinel_fleet_server (
    server_id serial PRIMARY KEY,
    name text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9_.-]{1,40}$'),
    method text NOT NULL CHECK (method IN ('logical', 'pull')),
    conninfo text NOT NULL,
    system_identifier bigint,
    remote_version text,
    -- logical: the subscription, its slot on the source, its OID (the feed)
    subscription name,
    slot_name name,
    feed bigint NOT NULL DEFAULT 0,
    -- samples at or before this time are not taken from this feed (the
    -- server was pulled until then, before it switched to logical)
    accept_after timestamptz,
    -- pull: the foreign server, the newest sample time pulled, and the
    -- newest statements' reading time pulled
    foreign_server name,
    pull_interval interval NOT NULL DEFAULT '10 seconds',
    pulled_until timestamptz,
    statements_pulled_until timestamptz,
    keep_one_in integer NOT NULL DEFAULT 1 CHECK (keep_one_in BETWEEN 1 AND 3600),
    last_pull timestamptz,
    last_error text,
    retention interval NOT NULL DEFAULT '30 days',
    -- the rollups (pgsentinel_fleet_roll()): the minutes before
    -- rolled_until and the hours before hours_rolled_until are rolled up;
    -- how long their minutes and hours are kept
    rolled_until timestamptz,
    hours_rolled_until timestamptz,
    minute_retention interval NOT NULL DEFAULT '30 days',
    hour_retention interval NOT NULL DEFAULT '1827 days',
    -- the repository node that holds the server's partitions (a
    -- postgres_fdw server here; NULL: this database), and when
    -- pgsentinel_fleet_node_keep() next makes its days ahead and drops
    -- its expired ones there
    node name,
    node_due timestamptz,
    added timestamptz NOT NULL DEFAULT pg_catalog.now(),
    removed timestamptz
);

CREATE TABLE pgsentinel_fleet_batch (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_batch INCLUDING STORAGE
) PARTITION BY LIST (server_id);

CREATE TABLE pgsentinel_fleet_session (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_session INCLUDING STORAGE
) PARTITION BY LIST (server_id);

CREATE TABLE pgsentinel_fleet_text (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_text INCLUDING STORAGE
) PARTITION BY LIST (server_id);

CREATE TABLE pgsentinel_fleet_wait_event (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_wait_event INCLUDING STORAGE
) PARTITION BY LIST (server_id);

-- The statements history (pgsentinel_archive_statement_batch, _statement_text):
-- the source's columns after server_id and feed.  A batch is identified by
-- (server_id, first_time), whatever the feed, as a batch of samples is: a
-- second copy of the same archive adds nothing.  The texts point into
-- pgsentinel_fleet_text by (server_id, feed, day, text_id), as the
-- batches' rows do.
CREATE TABLE pgsentinel_fleet_statement_batch (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_statement_batch INCLUDING STORAGE
) PARTITION BY LIST (server_id);

-- The readings as rows, as the archive's view shows its own
-- (32_archive_statements.sql).
CREATE VIEW pgsentinel_fleet_statement_delta AS
SELECT b.server_id, b.feed, u.*, b.first_time AS batch_start, b.last_time AS batch_end
  FROM pgsentinel_fleet_statement_batch b,
       pgsentinel_statement_rows(b.first_time, b.row_data) u;

CREATE TABLE pgsentinel_fleet_statement_text (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_statement_text INCLUDING STORAGE
) PARTITION BY LIST (server_id);

-- The rollups of every server, as the archive keeps its own (30_archive.sql):
-- each table's columns are its archive rollup's, then server_id.  The
-- repository makes them of the server's rows (pgsentinel_fleet_roll()),
-- whatever brought the rows.  Partitioned by server, then by day (minutes)
-- or month (hours).  pg_read_all_stats may read them: the reports of a
-- fleet server read them with their caller's rights, and they hold sums of
-- the rows the fleet's views show whole to it.
CREATE TABLE pgsentinel_fleet_rollup_minute_batch (LIKE pgsentinel_rollup_minute_batch
    INCLUDING STORAGE, server_id integer NOT NULL) PARTITION BY LIST (server_id);
CREATE TABLE pgsentinel_fleet_rollup_minute_observed (LIKE pgsentinel_rollup_minute_observed,
    server_id integer NOT NULL) PARTITION BY LIST (server_id);
CREATE TABLE pgsentinel_fleet_rollup_session_minute_batch (LIKE pgsentinel_rollup_session_minute_batch
    INCLUDING STORAGE, server_id integer NOT NULL) PARTITION BY LIST (server_id);
CREATE TABLE pgsentinel_fleet_rollup_blocking_minute_batch (LIKE pgsentinel_rollup_blocking_minute_batch
    INCLUDING STORAGE, server_id integer NOT NULL) PARTITION BY LIST (server_id);
CREATE TABLE pgsentinel_fleet_rollup_hour (LIKE pgsentinel_rollup_hour,
    server_id integer NOT NULL) PARTITION BY LIST (server_id);
CREATE TABLE pgsentinel_fleet_rollup_hour_observed (LIKE pgsentinel_rollup_hour_observed,
    server_id integer NOT NULL) PARTITION BY LIST (server_id);
CREATE TABLE pgsentinel_fleet_rollup_session_hour (LIKE pgsentinel_rollup_session_hour,
    server_id integer NOT NULL) PARTITION BY LIST (server_id);
CREATE TABLE pgsentinel_fleet_rollup_blocking_hour (LIKE pgsentinel_rollup_blocking_hour,
    server_id integer NOT NULL) PARTITION BY LIST (server_id);

-- A server's minutes as rows, as the archive's views show its own
-- (30_archive.sql).
CREATE VIEW pgsentinel_fleet_rollup_minute AS
SELECT b.bucket, u.*, b.server_id
  FROM pgsentinel_fleet_rollup_minute_batch b,
       pgsentinel_rollup_minute_rows(b.row_data) u;

-- Reads pgsentinel_fleet_rollup_session_minute_batch.
CREATE VIEW pgsentinel_fleet_rollup_session_minute AS
SELECT b.bucket, u.*, b.server_id
  FROM pgsentinel_fleet_rollup_session_minute_batch b,
       pgsentinel_rollup_session_minute_rows(b.row_data) u;

-- Reads pgsentinel_fleet_rollup_blocking_minute_batch.
CREATE VIEW pgsentinel_fleet_rollup_blocking_minute AS
SELECT b.bucket, u.*, b.server_id
  FROM pgsentinel_fleet_rollup_blocking_minute_batch b,
       pgsentinel_rollup_blocking_minute_rows(b.row_data) u;

REVOKE ALL ON pgsentinel_fleet_server, pgsentinel_fleet_batch,
    pgsentinel_fleet_session, pgsentinel_fleet_text,
    pgsentinel_fleet_wait_event, pgsentinel_fleet_statement_batch,
    pgsentinel_fleet_statement_delta,
    pgsentinel_fleet_statement_text, pgsentinel_fleet_rollup_minute_batch,
    pgsentinel_fleet_rollup_minute_observed, pgsentinel_fleet_rollup_session_minute_batch,
    pgsentinel_fleet_rollup_blocking_minute_batch, pgsentinel_fleet_rollup_hour,
    pgsentinel_fleet_rollup_hour_observed, pgsentinel_fleet_rollup_session_hour,
    pgsentinel_fleet_rollup_blocking_hour, pgsentinel_fleet_rollup_minute,
    pgsentinel_fleet_rollup_session_minute, pgsentinel_fleet_rollup_blocking_minute
    FROM PUBLIC;
GRANT SELECT ON pgsentinel_fleet_rollup_minute, pgsentinel_fleet_rollup_minute_observed,
    pgsentinel_fleet_rollup_session_minute, pgsentinel_fleet_rollup_blocking_minute,
    pgsentinel_fleet_rollup_minute_batch, pgsentinel_fleet_rollup_session_minute_batch,
    pgsentinel_fleet_rollup_blocking_minute_batch,
    pgsentinel_fleet_rollup_hour, pgsentinel_fleet_rollup_hour_observed,
    pgsentinel_fleet_rollup_session_hour, pgsentinel_fleet_rollup_blocking_hour
    TO pg_read_all_stats;
-- The tables of a server's rows too, which pgsentinel_fleet_rows() reads
-- with its caller's rights (in steps the view pgsentinel_fleet_ash cannot
-- be planned in), and its statements' deltas, which
-- pgsentinel_fleet_statements_in() reads without the texts the view
-- pgsentinel_fleet_statements joins: the views show their rows whole to
-- pg_read_all_stats already.
GRANT SELECT ON pgsentinel_fleet_batch, pgsentinel_fleet_session,
    pgsentinel_fleet_text, pgsentinel_fleet_wait_event, pgsentinel_fleet_statement_batch,
    pgsentinel_fleet_statement_delta TO pg_read_all_stats;

-- The fleet's partitioned tables: each server has its own partition of
-- each (server_key: its key there), partitioned by range_column in
-- partitions of a unit ('day', 'month'; NULL: not partitioned further),
-- dropped after the server's retention of that kind ('raw', 'minute',
-- 'hour').  Every list of the fleet's tables is this one.
CREATE FUNCTION pgsentinel_fleet_partitioned()
RETURNS TABLE (parent name, server_key text, range_column name, unit text,
               retention text)
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
SELECT * FROM (VALUES
    ('pgsentinel_fleet_batch'::name, 'PRIMARY KEY (server_id, first_time)'::text,
     'first_time'::name, 'day'::text, 'raw'::text),
    ('pgsentinel_fleet_session', 'PRIMARY KEY (server_id, feed, day, session_id)', 'day', 'day', 'raw'),
    ('pgsentinel_fleet_text', 'PRIMARY KEY (server_id, feed, day, text_id)', 'day', 'day', 'raw'),
    ('pgsentinel_fleet_wait_event', 'PRIMARY KEY (server_id, feed, wait_event_id)', NULL, NULL, NULL),
    ('pgsentinel_fleet_statement_batch',
     'PRIMARY KEY (server_id, first_time)', 'first_time', 'day', 'raw'),
    ('pgsentinel_fleet_statement_text',
     'PRIMARY KEY (server_id, feed, day, queryid, dbid, userid)', 'day', 'day', 'raw'),
    ('pgsentinel_fleet_rollup_minute_batch', NULL, 'bucket', 'day', 'minute'),
    ('pgsentinel_fleet_rollup_minute_observed', 'PRIMARY KEY (server_id, bucket)', 'bucket', 'day', 'minute'),
    ('pgsentinel_fleet_rollup_session_minute_batch', NULL, 'bucket', 'day', 'minute'),
    ('pgsentinel_fleet_rollup_blocking_minute_batch', NULL, 'bucket', 'day', 'minute'),
    ('pgsentinel_fleet_rollup_hour', NULL, 'bucket', 'month', 'hour'),
    ('pgsentinel_fleet_rollup_hour_observed', 'PRIMARY KEY (server_id, bucket)', 'bucket', 'month', 'hour'),
    ('pgsentinel_fleet_rollup_session_hour', NULL, 'bucket', 'month', 'hour'),
    ('pgsentinel_fleet_rollup_blocking_hour', NULL, 'bucket', 'month', 'hour')) v;
END;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_partitioned() FROM PUBLIC;
REVOKE ALL ON SEQUENCE pgsentinel_fleet_server_server_id_seq FROM PUBLIC;

-- The repository's list of servers is its configuration: pg_dump keeps it
-- (the subscriptions and foreign servers it names are dumped by pg_dump
-- itself).
SELECT pg_catalog.pg_extension_config_dump('pgsentinel_fleet_server', '');
SELECT pg_catalog.pg_extension_config_dump('pgsentinel_fleet_server_server_id_seq', '');

-- The roles, superusers aside, that may create objects in pgsentinel's
-- schema: its owner, the grantees of CREATE on it and their members.  Any
-- of them can plant a relation or function under a name pgsentinel looks
-- up when it runs.  Reads pg_roles and the schema's ACL.
CREATE FUNCTION pgsentinel_schema_creators()
RETURNS name[]
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(pg_catalog.array_agg(r.rolname ORDER BY r.rolname), '{}'::name[])
      FROM pg_catalog.pg_roles r
     WHERE NOT r.rolsuper
       -- the database's owner stands for it, under its own name
       AND r.rolname OPERATOR(pg_catalog.<>) 'pg_database_owner'::name
       AND pg_catalog.has_schema_privilege(r.oid,
               '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid, 'CREATE');
END;

-- The fleet runs as a superuser and looks names up in pgsentinel's schema
-- when it runs (a server's foreign tables and partitions): it refuses to
-- work in a schema that a role which is not a superuser may create in.
-- Called by pgsentinel_fleet_add(), pgsentinel_fleet_pull() and the tick.
CREATE FUNCTION pgsentinel_fleet_check_schema()
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    creators name[];
BEGIN
    SELECT @extschema@.pgsentinel_schema_creators() INTO creators;
    IF cardinality(creators) > 0 THEN
        RAISE EXCEPTION 'roles that are not superusers may create objects in schema "%", where pgsentinel''s fleet looks its tables up: %',
                        s, array_to_string(creators[1:5], ', ') || CASE WHEN cardinality(creators) > 5 THEN ', ...' ELSE '' END
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Such a role could create a relation there under a name the fleet uses, before the fleet does, and have the superuser who pulls run what it holds.',
                  HINT = format('Revoke it (REVOKE CREATE ON SCHEMA %I FROM %s), or install pgsentinel in a schema of its own for the repository (docs/security.md).',
                                s, (SELECT string_agg(quote_ident(c), ', ') FROM unnest(creators) c));
    END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_check_schema() FROM PUBLIC;

-- The foreign table of pull server foreign_server that ends in suffix
-- (_samples, _ash, _statements, _pgss), made by pgsentinel_fleet_add():
-- NULL when there is none; an error when a relation of that name is there
-- but is no foreign table of that foreign server owned by a superuser or
-- by the owner of pgsentinel_fleet_server (another role created it).
-- Reads pg_class, pg_foreign_table, pg_foreign_server.
CREATE FUNCTION pgsentinel_fleet_foreign_table(foreign_server name, suffix text)
RETURNS regclass
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    SELECT c.oid, c.relkind, pg_get_userbyid(c.relowner) AS owner,
           (SELECT x.srvname FROM pg_foreign_table ft JOIN pg_foreign_server x ON x.oid = ft.ftserver
             WHERE ft.ftrelid = c.oid) AS server,
           (SELECT o.rolsuper FROM pg_roles o WHERE o.oid = c.relowner)
           OR c.relowner = (SELECT f.relowner FROM pg_class f
                             WHERE f.relnamespace = c.relnamespace
                               AND f.relname = 'pgsentinel_fleet_server') AS trusted
      INTO r
      FROM pg_class c
     WHERE c.relnamespace = '@extschema@'::regnamespace
       AND c.relname = foreign_server || suffix;
    IF r.oid IS NULL THEN
        RETURN NULL;
    END IF;
    IF r.relkind <> 'f' OR r.server IS DISTINCT FROM foreign_server OR NOT r.trusted THEN
        RAISE EXCEPTION 'relation "%" is not the foreign table pgsentinel made for its fleet', foreign_server || suffix
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = format('It is a %s owned by %s%s: another role may have created it under a name pgsentinel uses.',
                                  CASE r.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view'
                                                 WHEN 'm' THEN 'materialized view' WHEN 'p' THEN 'partitioned table'
                                                 WHEN 'f' THEN 'foreign table' ELSE 'relation' END,
                                  r.owner,
                                  CASE WHEN r.server IS NOT NULL AND r.server <> foreign_server
                                       THEN format(' on foreign server %s', r.server) ELSE '' END),
                  HINT = 'Check what it is, drop or rename it, then add the server again (pgsentinel_fleet_remove(), pgsentinel_fleet_add()).';
    END IF;
    RETURN r.oid;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_foreign_table(name, text) FROM PUBLIC;

-- The partitions of one server for the days from first_day to last_day:
-- its own partition of each table (by LIST), then one per day, or per
-- month, of those (pgsentinel_fleet_partitioned()).  Creates only what is
-- missing; returns how many it created.  Called by the fleet's own
-- inserts, before they insert.  A relation of one of those names that is
-- not the partition pgsentinel made (attached to the table above it, with
-- that table's owner) is refused, never used nor dropped: another role may
-- have created it there first.
CREATE FUNCTION pgsentinel_fleet_partitions(server integer, first_day date,
                                            last_day date)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    t text;
    key text;
    range_column name;
    unit text;
    p text;
    part text;
    d date;
    lo date;
    hi date;
    created integer := 0;
    intruder record;
    revoke_from text;
BEGIN
    -- a partition made here keeps none of the schema's default privileges:
    -- it is read through the fleet's views, which mask what they must
    SELECT string_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                    ELSE quote_ident(pg_get_userbyid(a.grantee)) END, ', ')
      INTO revoke_from
      FROM pg_default_acl d, aclexplode(d.defaclacl) a
     WHERE d.defaclrole = (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user)
       AND d.defaclobjtype = 'r'
       AND d.defaclnamespace IN (0, (SELECT n.oid FROM pg_namespace n WHERE n.nspname = s))
       AND a.grantee <> d.defaclrole;
    FOR t, key, range_column, unit IN
        EXECUTE format('SELECT x.parent, x.server_key, x.range_column, x.unit
                          FROM %I.pgsentinel_fleet_partitioned() x ORDER BY x.parent', s) LOOP
        p := t || '_' || server::text;
        IF to_regclass(format('%I.%I', s, p)) IS NULL THEN
            -- two sessions may create it at once: the loser waits for the
            -- winner's transaction, then finds the table or is told it
            -- exists.  The lock is the one ATTACH PARTITION takes, on our
            -- own table: a role without rights on it cannot hold it (any
            -- role could hold an advisory key)
            EXECUTE format('LOCK TABLE ONLY %I.%I IN SHARE UPDATE EXCLUSIVE MODE', s, t);
            IF to_regclass(format('%I.%I', s, p)) IS NULL THEN
              -- the lock does not refresh this session's view of the
              -- catalog: the other's table may still look missing
              BEGIN
                -- made apart, then attached: ATTACH PARTITION takes a lock
                -- on the parent that inserts do not wait for (CREATE TABLE
                -- ... PARTITION OF takes an exclusive one, and deadlocked
                -- with an apply worker inserting into two of these parents)
                EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING STORAGE%s)%s',
                               s, p, s, t,
                               CASE WHEN key IS NOT NULL THEN ', ' || key ELSE '' END,
                               CASE WHEN range_column IS NOT NULL
                                    THEN format(' PARTITION BY RANGE (%I)', range_column)
                                    ELSE '' END);
                IF t IN ('pgsentinel_fleet_session', 'pgsentinel_fleet_text') THEN
                    EXECUTE format('CREATE INDEX ON %I.%I (server_id, feed, day, hash)', s, p);
                ELSIF key IS NULL THEN
                    -- a rollup, read by bucket
                    EXECUTE format('CREATE INDEX ON %I.%I USING brin (bucket) WITH (pages_per_range = 16)',
                                   s, p);
                END IF;
                IF revoke_from IS NOT NULL THEN
                    EXECUTE format('REVOKE ALL ON TABLE %I.%I FROM %s', s, p, revoke_from);
                END IF;
                EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES IN (%s)',
                               s, t, s, p, server);
                created := created + 1;
              EXCEPTION WHEN duplicate_table THEN
                NULL;
              END;
            END IF;
        END IF;
        SELECT c.oid, pg_get_userbyid(c.relowner) AS owner INTO intruder
          FROM pg_class c
         WHERE c.oid = to_regclass(format('%I.%I', s, p))
           AND NOT EXISTS (SELECT FROM pg_inherits i JOIN pg_class pc ON pc.oid = i.inhparent
                            WHERE i.inhrelid = c.oid
                              AND pc.oid = to_regclass(format('%I.%I', s, t))
                              AND pc.relowner = c.relowner);
        IF intruder.oid IS NOT NULL THEN
            RAISE EXCEPTION 'relation "%.%" is not the partition pgsentinel makes there', s, p
                USING ERRCODE = 'duplicate_table',
                      DETAIL = format('It is owned by %s and is not a partition of %I.%I: another role created it under a name pgsentinel uses.',
                                      intruder.owner, s, t),
                      HINT = 'Keep what it holds elsewhere, drop or rename it, then call again.';
        END IF;
        -- a server's partition on another node: its days are made there
        CONTINUE WHEN unit IS NULL
                   OR (SELECT c.relkind FROM pg_class c
                        WHERE c.oid = to_regclass(format('%I.%I', s, p))) <> 'p';
        d := CASE unit WHEN 'month' THEN date_trunc('month', first_day)::date ELSE first_day END;
        WHILE d <= last_day LOOP
            lo := d;
            hi := CASE unit WHEN 'month' THEN (d + interval '1 month')::date ELSE d + 1 END;
            part := p || '_' || to_char(d, CASE unit WHEN 'month' THEN 'YYYYMM' ELSE 'YYYYMMDD' END);
            IF to_regclass(format('%I.%I', s, part)) IS NULL THEN
                EXECUTE format('LOCK TABLE ONLY %I.%I IN SHARE UPDATE EXCLUSIVE MODE', s, p);
                IF to_regclass(format('%I.%I', s, part)) IS NULL THEN
                  BEGIN
                    -- made apart, then attached (above)
                    EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING STORAGE)', s, part, s, p);
                    IF revoke_from IS NOT NULL THEN
                        EXECUTE format('REVOKE ALL ON TABLE %I.%I FROM %s', s, part, revoke_from);
                    END IF;
                    -- a time is cut at UTC midnight, a date at the date
                    EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                                   s, p, s, part,
                                   CASE WHEN range_column = 'day' THEN lo::text
                                        ELSE timezone('UTC', lo::timestamp)::text END,
                                   CASE WHEN range_column = 'day' THEN hi::text
                                        ELSE timezone('UTC', hi::timestamp)::text END);
                    created := created + 1;
                  EXCEPTION WHEN duplicate_table THEN
                    NULL;
                  END;
                END IF;
            END IF;
            SELECT c.oid, pg_get_userbyid(c.relowner) AS owner INTO intruder
              FROM pg_class c
             WHERE c.oid = to_regclass(format('%I.%I', s, part))
               AND NOT EXISTS (SELECT FROM pg_inherits i JOIN pg_class pc ON pc.oid = i.inhparent
                                WHERE i.inhrelid = c.oid
                                  AND pc.oid = to_regclass(format('%I.%I', s, p))
                                  AND pc.relowner = c.relowner);
            IF intruder.oid IS NOT NULL THEN
                RAISE EXCEPTION 'relation "%.%" is not the partition pgsentinel makes there', s, part
                    USING ERRCODE = 'duplicate_table',
                          DETAIL = format('It is owned by %s and is not a partition of %I.%I: another role created it under a name pgsentinel uses.',
                                          intruder.owner, s, p),
                          HINT = 'Keep what it holds elsewhere, drop or rename it, then call again.';
            END IF;
            d := hi;
        END LOOP;
    END LOOP;
    RETURN created;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_partitions(integer, date, date) FROM PUBLIC;

-- Drop the days (or months) of one server's partitions in this database
-- that are past its retention of their kind: raw rows (retention), minute
-- rollups (minute_retention), hour rollups (hour_retention).  Whole
-- partitions, never a DELETE.  Returns how many it dropped.  A day is
-- dropped only if its table and the server's table above it can be locked
-- at once, else at a later call: an apply worker inserts into several of
-- these tables in one transaction, and a DROP waiting for one of them
-- while holding another could deadlock with it.  A day another call
-- dropped since it was listed is gone.  Only the partitions pgsentinel
-- made: a day of the server's table, which is itself a partition of the
-- fleet table, all three in our schema with one owner (a table another
-- role created under the server's name, before the server was added, is
-- not the server's).  The tick calls it for the servers of this database,
-- and on their node for the others (56_fleet_nodes.sql).
CREATE FUNCTION pgsentinel_fleet_expire(server integer, retention interval,
                                        minute_retention interval,
                                        hour_retention interval)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    f record;
    dropped integer := 0;
BEGIN
    FOR f IN EXECUTE format($q$
        SELECT format('LOCK TABLE ONLY %%I.%%I, %%I.%%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                      $1, p.relname, $1, c.relname) AS lock,
               format('DROP TABLE %%I.%%I', $1, c.relname) AS ddl
          FROM %1$I.pgsentinel_fleet_partitioned() l
          JOIN pg_class t ON t.relnamespace = $2 AND t.relname = l.parent
          JOIN pg_class p ON p.oid = to_regclass(format('%%I.%%I', $1, l.parent || '_' || $3))
           AND p.relnamespace = $2 AND p.relowner = t.relowner
          JOIN pg_inherits ip ON ip.inhrelid = p.oid AND ip.inhparent = t.oid
          JOIN pg_inherits i ON i.inhparent = p.oid
          JOIN pg_class c ON c.oid = i.inhrelid AND c.relnamespace = $2
           AND c.relowner = p.relowner
         WHERE CASE l.unit
               WHEN 'day' THEN c.relname ~ '_[0-9]{8}$'
                    AND c.relname = p.relname || '_' || right(c.relname, 8)
                    AND to_date(right(c.relname, 8), 'YYYYMMDD') + 1
                        <= (timezone('UTC', now() - CASE l.retention
                                                    WHEN 'raw' THEN $4
                                                    ELSE $5 END))::date
               WHEN 'month' THEN c.relname ~ '_[0-9]{6}$'
                    AND c.relname = p.relname || '_' || right(c.relname, 6)
                    AND (to_date(right(c.relname, 6), 'YYYYMM') + interval '1 month')::date
                        <= (timezone('UTC', now() - $6))::date
               ELSE false END
         ORDER BY c.relname$q$, s)
        USING s, (SELECT n.oid FROM pg_namespace n WHERE n.nspname = s), server::text,
              retention, minute_retention, hour_retention LOOP
        BEGIN
            EXECUTE f.lock;
            EXECUTE f.ddl;
            dropped := dropped + 1;
        EXCEPTION WHEN lock_not_available OR undefined_table THEN
            NULL;
        END;
    END LOOP;
    RETURN dropped;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_expire(integer, interval, interval, interval) FROM PUBLIC;
