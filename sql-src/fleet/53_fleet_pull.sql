
-- The pull transport (docs/fleet.md): the repository reads a server's ring
-- through postgres_fdw (the foreign tables pgsentinel_fleet_N_samples and
-- _ash that pgsentinel_fleet_add() made) and stores the samples after the
-- server's watermark (pulled_until, a sample time: sample ids restart when
-- a standby restarts, times do not go back) in the fleet tables, numbered
-- as the archiver numbers them (feed 0), 1 sample in keep_one_in.  One
-- statement inserts the rows and moves the watermark: a pull that fails
-- leaves both as they were, and the next pull takes the same samples.
--
-- $1 server id, $2 watermark, $3 keep_one_in, $4 most samples, $5 oldest
-- time taken (older samples have no partition).  %1$I the schema, %2$s and
-- %3$s the foreign tables of samples and rows (regclass, checked).
CREATE FUNCTION pgsentinel_fleet_pull_sql()
RETURNS text
LANGUAGE sql IMMUTABLE
RETURN $sql$
WITH smp AS MATERIALIZED (
  SELECT r.sample_id, r.sample_time, r.sample_period, r.active_sessions
    FROM %2$s r
   WHERE r.sample_time > greatest($2, $5)
   ORDER BY r.sample_time LIMIT $4),
 kept AS MATERIALIZED (
  SELECT * FROM smp WHERE smp.sample_id %% $3 = 0),
 rws AS MATERIALIZED (
  SELECT a.*, timezone('UTC', a.ash_time)::date AS day
    FROM %3$s a
    JOIN kept k ON k.sample_id = a.sample_id AND k.sample_time = a.ash_time
   WHERE a.ash_time >= (SELECT min(k.sample_time) FROM kept k)
     AND a.ash_time <= (SELECT max(k.sample_time) FROM kept k)),
--@include store_rows fleet
 upd AS (
  UPDATE %1$I.pgsentinel_fleet_server f
     SET pulled_until = coalesce((SELECT max(x.sample_time) FROM smp x), f.pulled_until),
         last_pull = now(), last_error = NULL
   WHERE f.server_id = $1
  RETURNING f.pulled_until)
SELECT (SELECT count(*) FROM smp)::int8, (SELECT count(*) FROM batch_samples s
                                           WHERE s.first_time IN (SELECT b.first_time FROM batches b))::int8,
       (SELECT count(*) FROM mapped)::int8, (SELECT count(*) FROM smp) >= $4
$sql$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_pull_sql() FROM PUBLIC;

-- The statements history of a pulled server: the deltas of its statements
-- ring (pgsentinel_ring_statements) after the server's statements
-- watermark (statements_pulled_until, a reading time: the readings are appended
-- in time order, and a reading's deltas depend on older readings only),
-- stored as the archive stores them, with the text of each statement per
-- day, numbered as the samples' texts (feed 0).  The texts come from the
-- source's archive or, for a statement it has none of (one run on a
-- standby only), from pg_stat_statements there, read only then.  What the
-- ring overwrote before it was pulled is lost, as for the samples.  One
-- statement stores them and moves the watermark; deltas already there
-- (server, statement, reading time) are skipped.  Rows whose query id the
-- source hides from the conninfo's role are not taken.
--
-- $1 server id, $2 watermark, $3 oldest time taken.  %1$I the schema, %2$s
-- the foreign table of the deltas, %3$s the relation of pg_stat_statements'
-- texts (queryid, dbid, userid, query).
CREATE FUNCTION pgsentinel_fleet_pull_statements_sql()
RETURNS text
LANGUAGE sql IMMUTABLE
RETURN $sql$
WITH d AS MATERIALIZED (
  SELECT r.ash_time, r.prev_ash_time, r.sample_id, r.userid, r.dbid,
         r.queryid, r.toplevel, r.reset, r.calls, r.rows, r.exec_ms, r.plans,
         r.plan_ms, r.shared_blks_hit, r.shared_blks_read,
         r.shared_blks_dirtied, r.shared_blks_written, r.temp_blks_read,
         r.temp_blks_written, r.wal_bytes, r.query,
         timezone('UTC', r.ash_time)::date AS day
    FROM %2$s r
   WHERE r.ash_time > greatest($2, $3) AND r.queryid IS NOT NULL),
 keys AS MATERIALIZED (
  SELECT DISTINCT ON (x.day, x.queryid, x.dbid, x.userid)
         x.day, x.queryid, x.dbid, x.userid, x.query
    FROM d x
   ORDER BY x.day, x.queryid, x.dbid, x.userid, x.query IS NULL, x.ash_time DESC),
 missing AS MATERIALIZED (
  SELECT k.* FROM keys k
   WHERE NOT EXISTS (SELECT FROM %1$I.pgsentinel_fleet_statement_text m
                      WHERE m.server_id = $1 AND m.feed = 0 AND m.day = k.day
                        AND m.queryid = k.queryid AND m.dbid = k.dbid
                        AND m.userid = k.userid)),
 pgss AS MATERIALIZED (
  SELECT p.queryid, p.dbid, p.userid, p.query
    FROM %3$s p
   WHERE (SELECT count(*) FROM missing m WHERE m.query IS NULL) > 0
     AND p.queryid IS NOT NULL AND p.query IS NOT NULL),
 found AS MATERIALIZED (
  SELECT m.day, m.queryid, m.dbid, m.userid,
         coalesce(m.query,
                  (SELECT p.query FROM pgss p
                    WHERE p.queryid = m.queryid AND p.dbid = m.dbid
                      AND p.userid = m.userid LIMIT 1)) AS text
    FROM missing m),
 txt_all AS MATERIALIZED (
  SELECT i.day, i.text, i.text_id
    FROM (SELECT array_agg(f.day) AS days, array_agg(f.text) AS texts
            FROM found f WHERE f.text IS NOT NULL) a,
         %1$I.pgsentinel_text_ids(a.days, a.texts, $1) i),
 map AS (
  INSERT INTO %1$I.pgsentinel_fleet_statement_text (server_id, feed, day, queryid,
         dbid, userid, text_id)
  SELECT $1, 0, f.day, f.queryid, f.dbid, f.userid, a.text_id
    FROM found f LEFT JOIN txt_all a ON a.day = f.day AND a.text = f.text
  ON CONFLICT DO NOTHING
  RETURNING 1),
 ins AS (
  INSERT INTO %1$I.pgsentinel_fleet_statement_batch (server_id, feed,
         first_time, last_time, row_data)
  SELECT $1, 0, min(x.first_time), max(x.ash_time),
         %1$I.pgsentinel_statement_batch_pack(
         %1$I.pgsentinel_pack(array_agg(%1$I.pgsentinel_us_between(x.first_time, x.ash_time))),
         %1$I.pgsentinel_pack(array_agg(%1$I.pgsentinel_us_between(x.prev_ash_time, x.ash_time))),
         %1$I.pgsentinel_pack(array_agg(x.sample_id)), array_agg(x.queryid),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.calls, 0) END)),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.rows, 0) END)),
         array_agg(CASE WHEN NOT x.reset THEN nullif(x.exec_ms, 0) END),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.plans, 0) END)),
         array_agg(CASE WHEN NOT x.reset THEN nullif(x.plan_ms, 0) END),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.shared_blks_hit, 0) END)),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.shared_blks_read, 0) END)),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.shared_blks_dirtied, 0) END)),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.shared_blks_written, 0) END)),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.temp_blks_read, 0) END)),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset THEN nullif(x.temp_blks_written, 0) END)),
         %1$I.pgsentinel_pack(array_agg(CASE WHEN NOT x.reset
                        THEN nullif(least(x.wal_bytes, 9223372036854775807), 0)::int8 END)),
         array_agg(x.userid), array_agg(x.dbid), array_agg(x.toplevel),
         array_agg(x.reset))
    FROM (SELECT y.*, min(y.ash_time) OVER (PARTITION BY y.day) AS first_time
            FROM d y
           ORDER BY y.day, y.userid, y.dbid, y.queryid, y.toplevel, y.ash_time,
                    y.sample_id) x
   GROUP BY x.day
  ON CONFLICT DO NOTHING
  RETURNING (SELECT count(*) FROM %1$I.pgsentinel_statement_rows(first_time, row_data)) AS n),
 upd AS (
  UPDATE %1$I.pgsentinel_fleet_server f
     SET statements_pulled_until = coalesce((SELECT max(x.ash_time) FROM d x), f.statements_pulled_until)
   WHERE f.server_id = $1
  RETURNING 1)
SELECT (SELECT count(*) FROM d)::int8, (SELECT coalesce(sum(i.n), 0) FROM ins i)::int8,
       (SELECT count(*) FROM map)::int8
$sql$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_pull_statements_sql() FROM PUBLIC;

-- Pull now: the named server, or every pull server of the fleet (NULL).
-- Takes up to 100 batches of 3600 samples per server, and no more batches
-- once half of pgsentinel_archive.fleet_pull_timeout has passed (the
-- archiver's deadline for one pull: a long catch-up goes on at the next
-- pull from what this one committed, instead of failing whole every
-- time).  An error on one
-- server is kept in its last_error (pgsentinel_fleet_status shows it) and
-- the others go on; when one server was named, the error is raised.
CREATE FUNCTION pgsentinel_fleet_pull(server text DEFAULT NULL)
RETURNS TABLE (name text, samples_seen bigint, samples_stored bigint,
               rows_stored bigint, statements_stored bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
-- (the store part hashes rows as text: one setting for every pull, by hand
-- or by the tick)
SET TimeZone = 'UTC'
SET DateStyle = 'ISO, YMD'
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    f record;
    q text;
    qs text;
    texts text;
    seen bigint;
    stored bigint;
    nrows bigint;
    more boolean;
    batches integer;
    wm timestamptz;
    part text;
    lookup text;
    started timestamptz := clock_timestamp();
    budget interval := coalesce(nullif(current_setting('pgsentinel_archive.fleet_pull_timeout', true), '')::interval,
                                interval '1 minute') / 2;
    samples_table regclass;
    ash_table regclass;
    statements_table regclass;
    pgss_table regclass;
    floor_time timestamptz := timezone('UTC', (timezone('UTC', now())::date - 2)::timestamp);
BEGIN
    PERFORM @extschema@.pgsentinel_fleet_check_schema();
    IF server IS NOT NULL THEN
        EXECUTE format('SELECT count(*) FROM %I.pgsentinel_fleet_server f
                         WHERE f.name = $1 AND f.method = ''pull'' AND f.removed IS NULL', s)
            INTO batches USING server;
        IF batches = 0 THEN
            RAISE EXCEPTION 'no pull server "%" in the fleet', server
                USING ERRCODE = 'undefined_object',
                      HINT = 'SELECT name, method FROM pgsentinel_fleet_status; lists them.';
        END IF;
    END IF;
    SELECT @extschema@.pgsentinel_fleet_pull_sql() INTO q;
    SELECT @extschema@.pgsentinel_fleet_pull_statements_sql() INTO qs;
    -- partitions of the days a pull may fill: from two days ago to tomorrow
    FOR f IN EXECUTE format('SELECT f.server_id, f.name, f.keep_one_in, f.foreign_server
                               FROM %I.pgsentinel_fleet_server f
                              WHERE f.method = ''pull'' AND f.removed IS NULL
                                AND ($1 IS NULL OR f.name = $1)
                              ORDER BY f.server_id', s) USING server LOOP
        name := f.name;
        samples_seen := 0;
        samples_stored := 0;
        rows_stored := 0;
        statements_stored := 0;
        BEGIN
            PERFORM @extschema@.pgsentinel_fleet_partitions(f.server_id, (timezone('UTC', floor_time)::date), (timezone('UTC', now())::date + 1));
            -- the server's foreign tables, checked: a relation another
            -- role made under one of their names is never read
            lookup := format('SELECT %I.pgsentinel_fleet_foreign_table($1::pg_catalog.name, $2::pg_catalog.text)', s);
            EXECUTE lookup INTO samples_table USING f.foreign_server, '_samples';
            EXECUTE lookup INTO ash_table USING f.foreign_server, '_ash';
            EXECUTE lookup INTO statements_table USING f.foreign_server, '_statements';
            EXECUTE lookup INTO pgss_table USING f.foreign_server, '_pgss';
            IF samples_table IS NULL OR ash_table IS NULL THEN
                RAISE EXCEPTION 'the foreign tables of fleet server "%" are missing', f.name
                    USING ERRCODE = 'undefined_table',
                          HINT = 'Add the server again: pgsentinel_fleet_remove(), then pgsentinel_fleet_add().';
            END IF;
            batches := 0;
            LOOP
                -- one pull of a server at a time: the watermark, locked
                EXECUTE format('SELECT x.pulled_until FROM %I.pgsentinel_fleet_server x
                                 WHERE x.server_id = $1 FOR UPDATE', s)
                    INTO wm USING f.server_id;
                EXECUTE format(q, s, samples_table, ash_table)
                    INTO seen, stored, nrows, more
                    USING f.server_id, coalesce(wm, '-infinity'::timestamptz),
                          f.keep_one_in, 3600, floor_time;
                samples_seen := samples_seen + seen;
                samples_stored := samples_stored + stored;
                rows_stored := rows_stored + nrows;
                batches := batches + 1;
                EXIT WHEN NOT more OR batches >= 100
                          OR clock_timestamp() > started + budget;
            END LOOP;
            -- the statements history, after the samples (the server's row
            -- is locked); a foreign server made without its foreign table
            -- has none to pull
            IF statements_table IS NOT NULL THEN
                texts := CASE WHEN pgss_table IS NOT NULL
                              THEN pgss_table::text
                              ELSE '(SELECT NULL::int8 AS queryid, NULL::oid AS dbid, NULL::oid AS userid, NULL::text AS query WHERE false)'
                         END;
                EXECUTE format('SELECT x.statements_pulled_until FROM %I.pgsentinel_fleet_server x
                                 WHERE x.server_id = $1 FOR UPDATE', s)
                    INTO wm USING f.server_id;
                EXECUTE format(qs, s, statements_table, texts)
                    INTO seen, stored, nrows
                    USING f.server_id, coalesce(wm, '-infinity'::timestamptz), floor_time;
                statements_stored := stored;
            END IF;
            -- a day partition the pull filled has no statistics until
            -- autovacuum gathers them (a minute later, or more): the reports
            -- read right after it would be planned for empty tables (a
            -- report of a pulled ring took minutes instead of seconds)
            FOR part IN EXECUTE format($q$
                SELECT format('ANALYZE %%I.%%I', $1, c.relname)
                  FROM pg_class t
                 CROSS JOIN LATERAL pg_partition_tree(t.oid) x
                  JOIN pg_class c ON c.oid = x.relid
                 WHERE t.relnamespace = $2 AND t.relkind = 'p'
                   AND t.relname IN ('pgsentinel_fleet_batch', 'pgsentinel_fleet_session',
                                     'pgsentinel_fleet_text', 'pgsentinel_fleet_wait_event',
                                     'pgsentinel_fleet_statement_batch',
                                     'pgsentinel_fleet_statement_text')
                   AND x.isleaf AND c.relnamespace = $2 AND c.relowner = t.relowner
                   AND (c.relname = t.relname || '_' || $3
                        OR c.relname LIKE t.relname || '\_' || $3 || '\_%%')
                   AND c.reltuples <= 0 AND pg_relation_size(c.oid) > 0
                 ORDER BY c.relname$q$)
                USING s, (SELECT n.oid FROM pg_namespace n WHERE n.nspname = s), f.server_id LOOP
                -- statistics are a help: a partition dropped meanwhile, or
                -- a lock not had, costs the pull nothing
                BEGIN
                    EXECUTE part;
                EXCEPTION WHEN OTHERS THEN
                    NULL;
                END;
            END LOOP;
        EXCEPTION WHEN OTHERS THEN
            IF server IS NOT NULL THEN
                RAISE;
            END IF;
            EXECUTE format('UPDATE %I.pgsentinel_fleet_server SET last_pull = now(), last_error = $2
                             WHERE server_id = $1', s)
                USING f.server_id, SQLERRM;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_pull(text) FROM PUBLIC;

-- Record that a server's pull failed (the pull's own work, its error
-- included, was rolled back with it).  Called by the archiver, which
-- pulls each server in a transaction of its own; returns the rows
-- updated.
CREATE FUNCTION pgsentinel_fleet_pull_failed(server_name text, error_message text)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    updated integer;
BEGIN
    EXECUTE format('UPDATE %I.pgsentinel_fleet_server SET last_pull = now(), last_error = $2
                     WHERE name = $1', s)
        USING server_name, error_message;
    GET DIAGNOSTICS updated = ROW_COUNT;
    RETURN updated;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_pull_failed(text, text) FROM PUBLIC;

-- Drop the partitions of the servers kept here that are past their
-- retention (pgsentinel_fleet_expire()); the nodes keep theirs
-- (pgsentinel_fleet_node_keep()).  Returns the partitions dropped.
CREATE FUNCTION pgsentinel_fleet_expire_all()
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    dropped integer;
BEGIN
    EXECUTE format('SELECT coalesce(sum(%1$I.pgsentinel_fleet_expire(v.server_id, v.retention,
                                                            v.minute_retention, v.hour_retention)), 0)
                      FROM %1$I.pgsentinel_fleet_server v WHERE v.node IS NULL', s)
        INTO dropped;
    RETURN dropped;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_expire_all() FROM PUBLIC;

-- What the repository does periodically (the archiver calls it every
-- pgsentinel_archive.interval when pgsentinel is preloaded there; or
-- schedule it with pg_cron): pull the servers whose pull_interval has
-- passed, and drop the partitions past each server's retention.  The
-- archiver first keeps the days on other repository nodes
-- (pgsentinel_fleet_node_keep(), 56_fleet_nodes.sql), each in a
-- transaction of its own.  The
-- archiver then rolls the servers up (pgsentinel_fleet_roll(), in
-- 55_fleet_rollups.sql) in a transaction of its own.
-- Returns the servers pulled.
CREATE FUNCTION pgsentinel_fleet_tick()
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    f record;
    pulled integer := 0;
BEGIN
    PERFORM @extschema@.pgsentinel_fleet_check_schema();
    FOR f IN EXECUTE format('SELECT f.name FROM %I.pgsentinel_fleet_server f
                              WHERE f.method = ''pull'' AND f.removed IS NULL
                                AND (f.last_pull IS NULL
                                     OR f.last_pull + f.pull_interval <= now())
                              ORDER BY f.server_id', s) LOOP
        BEGIN
            EXECUTE format('SELECT count(*) FROM %I.pgsentinel_fleet_pull($1)', s) USING f.name;
            pulled := pulled + 1;
        EXCEPTION WHEN OTHERS THEN
            EXECUTE format('UPDATE %I.pgsentinel_fleet_server SET last_pull = now(), last_error = $2
                             WHERE name = $1', s)
                USING f.name, SQLERRM;
        END;
    END LOOP;
    PERFORM @extschema@.pgsentinel_fleet_expire_all();
    RETURN pulled;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_tick() FROM PUBLIC;
