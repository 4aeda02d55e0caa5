
-- The fleet (docs/fleet.md): a repository database keeps the archives of
-- many servers, each row tagged with its server.  These tables exist in
-- every installation and stay empty unless pgsentinel_fleet_add() is
-- called there.  They are granted to nobody; the fleet views read them
-- with their owner's rights, for pg_read_all_stats.
--
-- Identity: a sample is (server_id, sample_time), unique, and every
-- insert skips a sample already there, so that a copy made twice (the
-- initial copy of a new subscription after a failover, a pull repeated
-- after an error) never doubles a sample.  The activities, texts and wait
-- events a sample's arrays point to are numbered by their feed: the
-- subscription that copied them (its OID), or 0 for what the repository
-- pulled and numbered itself.  A new feed after a failover numbers its
-- activities afresh without clashing with what the old one copied.
--
-- Columns: each table's are its archive table's (LIKE), after server_id
-- and feed: a server's rows are stored as its own archive stored them.
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
    added timestamptz NOT NULL DEFAULT pg_catalog.now(),
    removed timestamptz
);

CREATE TABLE pgsentinel_fleet_sample (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_sample
) PARTITION BY LIST (server_id);

CREATE TABLE pgsentinel_fleet_session (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_session
) PARTITION BY LIST (server_id);

CREATE TABLE pgsentinel_fleet_activity (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_activity
) PARTITION BY LIST (server_id);

CREATE TABLE pgsentinel_fleet_text (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_text
) PARTITION BY LIST (server_id);

CREATE TABLE pgsentinel_fleet_wait_event (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_wait_event
) PARTITION BY LIST (server_id);

-- The statements history (pgsentinel_archive_statement_delta, _statement_text):
-- the source's columns after server_id and feed.  A delta is identified by
-- (server_id, statement, reading time), whatever the feed, as a sample is
-- by its time: a second copy of the same archive adds nothing.  The texts
-- point into pgsentinel_fleet_text by (server_id, feed, day, text_id), as
-- the activities do.
CREATE TABLE pgsentinel_fleet_statement_delta (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_statement_delta
) PARTITION BY LIST (server_id);

CREATE TABLE pgsentinel_fleet_statement_text (
    server_id integer NOT NULL,
    feed bigint NOT NULL,
    LIKE pgsentinel_archive_statement_text
) PARTITION BY LIST (server_id);

REVOKE ALL ON pgsentinel_fleet_server, pgsentinel_fleet_sample,
    pgsentinel_fleet_session, pgsentinel_fleet_activity, pgsentinel_fleet_text,
    pgsentinel_fleet_wait_event, pgsentinel_fleet_statement_delta,
    pgsentinel_fleet_statement_text FROM PUBLIC;
REVOKE ALL ON SEQUENCE pgsentinel_fleet_server_server_id_seq FROM PUBLIC;

-- The repository's list of servers is its configuration: pg_dump keeps it
-- (the subscriptions and foreign servers it names are dumped by pg_dump
-- itself).
SELECT pg_catalog.pg_extension_config_dump('pgsentinel_fleet_server', '');
SELECT pg_catalog.pg_extension_config_dump('pgsentinel_fleet_server_server_id_seq', '');

-- The partitions of one server for the days from first_day to last_day:
-- its own partition of each table (by LIST), then one per day of those
-- partitioned by day.  Creates only what is missing; returns how many it
-- created.  Called by the fleet's own inserts, before they insert.  A
-- relation of one of those names that is not the partition pgsentinel
-- made (attached to the table above it, with that table's owner) is
-- refused, never used nor dropped: another role may have created it
-- there first.
CREATE FUNCTION pgsentinel_fleet_partitions(server integer, first_day date,
                                            last_day date)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s name;
    t text;
    p text;
    d date;
    created integer := 0;
    intruder record;
    revoke_from text;
BEGIN
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgsentinel';
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
    FOREACH t IN ARRAY ARRAY['pgsentinel_fleet_sample', 'pgsentinel_fleet_session',
                             'pgsentinel_fleet_activity',
                             'pgsentinel_fleet_text', 'pgsentinel_fleet_wait_event',
                             'pgsentinel_fleet_statement_delta', 'pgsentinel_fleet_statement_text'] LOOP
        p := t || '_' || server::text;
        IF to_regclass(format('%I.%I', s, p)) IS NULL THEN
            -- two sessions may create it at once: the loser waits for the
            -- winner's transaction, then finds the table or is told it exists
            PERFORM pg_advisory_xact_lock(hashtext('pgsentinel_fleet_partitions'));
            IF to_regclass(format('%I.%I', s, p)) IS NULL THEN
              -- the lock does not refresh this session's view of the
              -- catalog: the other's table may still look missing
              BEGIN
                -- made apart, then attached: ATTACH PARTITION takes a lock
                -- on the parent that inserts do not wait for (CREATE TABLE
                -- ... PARTITION OF takes an exclusive one, and deadlocked
                -- with an apply worker inserting into two of these parents)
                EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I, %s)%s',
                               s, p, s, t,
                               CASE t WHEN 'pgsentinel_fleet_sample' THEN 'PRIMARY KEY (server_id, sample_time)'
                                      WHEN 'pgsentinel_fleet_wait_event' THEN 'PRIMARY KEY (server_id, feed, wait_event_id)'
                                      WHEN 'pgsentinel_fleet_session' THEN 'PRIMARY KEY (server_id, feed, day, session_id)'
                                      WHEN 'pgsentinel_fleet_activity' THEN 'PRIMARY KEY (server_id, feed, day, activity_id)'
                                      WHEN 'pgsentinel_fleet_statement_delta' THEN 'PRIMARY KEY (server_id, ash_time, queryid, dbid, userid, toplevel)'
                                      WHEN 'pgsentinel_fleet_statement_text' THEN 'PRIMARY KEY (server_id, feed, day, queryid, dbid, userid)'
                                      ELSE 'PRIMARY KEY (server_id, feed, day, text_id)' END,
                               CASE t WHEN 'pgsentinel_fleet_wait_event' THEN ''
                                      WHEN 'pgsentinel_fleet_sample' THEN ' PARTITION BY RANGE (sample_time)'
                                      WHEN 'pgsentinel_fleet_statement_delta' THEN ' PARTITION BY RANGE (ash_time)'
                                      ELSE ' PARTITION BY RANGE (day)' END);
                IF t IN ('pgsentinel_fleet_session', 'pgsentinel_fleet_text') THEN
                    EXECUTE format('CREATE INDEX ON %I.%I (server_id, feed, day, hash)', s, p);
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
        CONTINUE WHEN t = 'pgsentinel_fleet_wait_event'
                   OR (SELECT c.relkind FROM pg_class c
                        WHERE c.oid = to_regclass(format('%I.%I', s, p))) <> 'p';
        d := first_day;
        WHILE d <= last_day LOOP
            IF to_regclass(format('%I.%I', s, p || '_' || to_char(d, 'YYYYMMDD'))) IS NULL THEN
                PERFORM pg_advisory_xact_lock(hashtext('pgsentinel_fleet_partitions'));
                IF to_regclass(format('%I.%I', s, p || '_' || to_char(d, 'YYYYMMDD'))) IS NULL THEN
                  BEGIN
                    -- made apart, then attached (above)
                    EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I)',
                                   s, p || '_' || to_char(d, 'YYYYMMDD'), s, p);
                    IF revoke_from IS NOT NULL THEN
                        EXECUTE format('REVOKE ALL ON TABLE %I.%I FROM %s',
                                       s, p || '_' || to_char(d, 'YYYYMMDD'), revoke_from);
                    END IF;
                    IF t IN ('pgsentinel_fleet_sample', 'pgsentinel_fleet_statement_delta') THEN
                        EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                                       s, p, s, p || '_' || to_char(d, 'YYYYMMDD'),
                                       timezone('UTC', d::timestamp),
                                       timezone('UTC', (d + 1)::timestamp));
                    ELSE
                        EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                                       s, p, s, p || '_' || to_char(d, 'YYYYMMDD'), d, d + 1);
                    END IF;
                    created := created + 1;
                  EXCEPTION WHEN duplicate_table THEN
                    NULL;
                  END;
                END IF;
            END IF;
            SELECT c.oid, pg_get_userbyid(c.relowner) AS owner INTO intruder
              FROM pg_class c
             WHERE c.oid = to_regclass(format('%I.%I', s, p || '_' || to_char(d, 'YYYYMMDD')))
               AND NOT EXISTS (SELECT FROM pg_inherits i JOIN pg_class pc ON pc.oid = i.inhparent
                                WHERE i.inhrelid = c.oid
                                  AND pc.oid = to_regclass(format('%I.%I', s, p))
                                  AND pc.relowner = c.relowner);
            IF intruder.oid IS NOT NULL THEN
                RAISE EXCEPTION 'relation "%.%" is not the partition pgsentinel makes there', s, p || '_' || to_char(d, 'YYYYMMDD')
                    USING ERRCODE = 'duplicate_table',
                          DETAIL = format('It is owned by %s and is not a partition of %I.%I: another role created it under a name pgsentinel uses.',
                                          intruder.owner, s, p),
                          HINT = 'Keep what it holds elsewhere, drop or rename it, then call again.';
            END IF;
            d := d + 1;
        END LOOP;
    END LOOP;
    RETURN created;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_partitions(integer, date, date) FROM PUBLIC;
