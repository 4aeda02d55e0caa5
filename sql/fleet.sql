--
-- The fleet's setup functions (docs/fleet.md): every error says what is
-- wrong and what to do; a loopback pull (this server added to its own
-- fleet) stores its samples once, however often it is pulled; removal
-- with and without the history.  The logical transport, the standby and
-- the restarts are in t/030_fleet.pl.
--
\set VERBOSITY default
\set SHOW_CONTEXT never
SET client_min_messages = error;

-- The fleet needs dblink and postgres_fdw: a PostgreSQL built without
-- contrib (the sanitizer build) stops here (expected/fleet_1.out).
SELECT count(*) = 2 AS fleet_contrib FROM pg_available_extensions
 WHERE name IN ('dblink', 'postgres_fdw') \gset
\if :fleet_contrib
\else
\echo 'dblink and postgres_fdw are not installed: the fleet is not tested here'
\quit
\endif

-- wrong arguments
SELECT pgsentinel_fleet_add('bad name!', 'dbname=x');
SELECT pgsentinel_fleet_add('a', 'dbname=x', method => 'carrier pigeon');
SELECT pgsentinel_fleet_add('a', 'dbname=x', keep_one_in => 0);
SELECT pgsentinel_fleet_add('a', 'dbname=x', retention => '1 hour');
SELECT pgsentinel_fleet_add('a', 'postgresql://pgs:secret@db1/postgres', method => 'pull');

-- a conninfo is read as libpq reads it: quoted values with escapes, and
-- unquoted ones with a backslash before a space or a quote; a conninfo that
-- is not all key=value pairs is refused
SELECT key, value FROM pgsentinel_fleet_conninfo($$host=h password=ab'cdTOPSECRETTAIL user=u$$);
SELECT key, value FROM pgsentinel_fleet_conninfo($$password=pa\ SECRETAFTERSPACE port = 1$$);
SELECT key, value FROM pgsentinel_fleet_conninfo($$password='it\'s \\ x'   host=h  sslmode=''$$);
SELECT pgsentinel_fleet_add('a', $$host=h password='unterminated$$, method => 'pull');

-- the transports' extensions are needed
SELECT pgsentinel_fleet_add('a', 'dbname=x');
CREATE SCHEMA fleet_ext;
CREATE EXTENSION dblink SCHEMA fleet_ext;
SELECT pgsentinel_fleet_add('a', 'dbname=x', method => 'pull');
CREATE EXTENSION postgres_fdw SCHEMA fleet_ext;
-- dblink where every role may call it is refused
GRANT USAGE ON SCHEMA fleet_ext TO PUBLIC;
SELECT pgsentinel_fleet_add('a', 'dbname=x', method => 'pull');
REVOKE USAGE ON SCHEMA fleet_ext FROM PUBLIC;

-- the source: unreachable, without pgsentinel, not publishing
SELECT format('host=%s port=%s', split_part(current_setting('unix_socket_directories'), ',', 1),
              current_setting('port')) AS here \gset
SELECT pgsentinel_fleet_add('a', 'host=/nonexistent port=1 dbname=postgres', method => 'pull');
SELECT pgsentinel_fleet_add('a', :'here' || ' dbname=template1', method => 'pull');
-- a repository cannot subscribe to itself (creating the slot would wait
-- for its own transaction), whatever its wal_level
SELECT pgsentinel_fleet_add('a', :'here' || ' dbname=' || current_database());
-- publishing needs wal_level = logical (the error names the server's
-- wal_level, which depends on the test server's settings: shown as "...")
CREATE FUNCTION pg_temp.fleet_error(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    hint text;
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RETURN regexp_replace(regexp_replace(SQLERRM, 'wal_level is "[a-z]+"', 'wal_level is "..."')
                          || E'\nHINT: ' || hint, 'pgsentinel_fleet_[0-9]+', 'pgsentinel_fleet_N', 'g');
END $$;
SELECT pg_temp.fleet_error('SELECT pgsentinel_fleet_publish()');

-- the name the next server would be given is taken (by what an earlier
-- installation left, which DROP EXTENSION does not drop): said, and
-- nothing is created
SELECT 'pgsentinel_fleet_' || CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS taken
  FROM pgsentinel_fleet_server_server_id_seq \gset
CREATE SERVER :"taken" FOREIGN DATA WRAPPER postgres_fdw;
SELECT pg_temp.fleet_error(format('SELECT pgsentinel_fleet_add(''self'', %L, method => ''pull'')',
                                  :'here' || ' dbname=' || current_database()));
SELECT count(*) AS nothing_added FROM pgsentinel_fleet_status;
DROP SERVER :"taken";

-- a loopback pull: this server is its own fleet's "self".  The ring is
-- emptied first: a full ring would overwrite the oldest pulled samples
-- before they are compared with it below.
-- A role that may create in the extension's schema creates, before the
-- server is added, the table pgsentinel would make for it, with a table of
-- its own attached that is named like another user's: pgsentinel refuses
-- the name rather than take that table for its own, and its retention
-- drops nothing of another role (docs/security.md).
CREATE ROLE regress_fleet_squatter;
GRANT CREATE ON SCHEMA public TO regress_fleet_squatter;
CREATE SCHEMA regress_squatter_own AUTHORIZATION regress_fleet_squatter;
CREATE TABLE public.sales_20200101 (amount numeric);
SELECT 'pgsentinel_fleet_batch_' || CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS squatted
  FROM pgsentinel_fleet_server_server_id_seq \gset
SET ROLE regress_fleet_squatter;
CREATE TABLE public.:"squatted" (server_id integer, sample_time timestamptz)
    PARTITION BY RANGE (sample_time);
CREATE TABLE regress_squatter_own.sales_20200101 PARTITION OF public.:"squatted"
    FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
RESET ROLE;
-- while another role may create in the schema, the fleet refuses it
SELECT pg_temp.fleet_error(format('SELECT pgsentinel_fleet_add(''squatted'', %L, method => ''pull'')',
                                  :'here' || ' dbname=' || current_database()));
SELECT pg_temp.fleet_error('SELECT pgsentinel_fleet_tick()');
-- the right taken back, what the squatter made is refused by name
REVOKE CREATE ON SCHEMA public FROM regress_fleet_squatter;
SELECT pg_temp.fleet_error(format('SELECT pgsentinel_fleet_add(''squatted'', %L, method => ''pull'')',
                                  :'here' || ' dbname=' || current_database()));
SELECT pgsentinel_fleet_tick() >= 0 AS ticked;
SELECT to_regclass('public.sales_20200101') IS NOT NULL AS other_users_table_kept;
SELECT count(*) AS squatted_server_added FROM pgsentinel_fleet_status WHERE name = 'squatted';
DO $$
BEGIN
    IF EXISTS (SELECT FROM pgsentinel_fleet_status WHERE name = 'squatted') THEN
        PERFORM pgsentinel_fleet_remove('squatted', false);
    END IF;
END $$;
DROP TABLE IF EXISTS public.sales_20200101;
DROP TABLE IF EXISTS public.:"squatted";
DROP SCHEMA regress_squatter_own CASCADE;
DROP ROLE regress_fleet_squatter;

-- An overload with defaults under one of our names (it makes our calls of
-- that name ambiguous), made while a superuser had disabled the event
-- trigger that refuses it: the setup is refused, the function named.
CREATE ROLE regress_fleet_overloader;
GRANT CREATE ON SCHEMA public TO regress_fleet_overloader;
ALTER EVENT TRIGGER pgsentinel_refuse_overloads DISABLE;
SET ROLE regress_fleet_overloader;
CREATE FUNCTION public.pgsentinel_fleet_conninfo(conninfo text, strict boolean DEFAULT false)
RETURNS TABLE (key text, value text) LANGUAGE sql AS 'SELECT NULL::text, NULL::text';
RESET ROLE;
ALTER EVENT TRIGGER pgsentinel_refuse_overloads ENABLE;
REVOKE CREATE ON SCHEMA public FROM regress_fleet_overloader;
SELECT pg_temp.fleet_error(format('SELECT pgsentinel_fleet_add(''overloaded'', %L, method => ''pull'')',
                                  :'here' || ' dbname=' || current_database()));
DROP FUNCTION public.pgsentinel_fleet_conninfo(text, boolean);
DROP ROLE regress_fleet_overloader;

-- A role that may create in the extension's schema plants overloads of our
-- helpers that an untyped literal or NULL would prefer: the superuser's
-- pgsentinel_fleet_add() below must not run them (docs/security.md).
CREATE ROLE regress_fleet_mallory;
GRANT CREATE ON SCHEMA public TO regress_fleet_mallory;
SELECT 'pgsentinel_fleet_' || CASE WHEN is_called THEN last_value + 1 ELSE last_value END || '_pgss' AS planted_pgss
  FROM pgsentinel_fleet_server_server_id_seq \gset
SET ROLE regress_fleet_mallory;
CREATE FUNCTION public.pgsentinel_fleet_needs(extension text) RETURNS name
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'ALTER ROLE regress_fleet_mallory SUPERUSER';
    RETURN (SELECT n.nspname FROM pg_catalog.pg_extension e
              JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
             WHERE e.extname = extension);
END$$;
CREATE FUNCTION public.pgsentinel_fleet_partitions(server integer, first_day text, last_day text)
RETURNS integer
LANGUAGE plpgsql AS $$BEGIN EXECUTE 'ALTER ROLE regress_fleet_mallory SUPERUSER'; RETURN 0; END$$;
-- and a view under the name of the next server's foreign table of
-- pg_stat_statements: a pull would read it as the superuser
CREATE VIEW public.:"planted_pgss" AS SELECT 1 AS x;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM regress_fleet_mallory;
SELECT pg_temp.fleet_error(format('SELECT pgsentinel_fleet_add(''planted'', %L, method => ''pull'')',
                                  :'here' || ' dbname=' || current_database()));
DROP VIEW public.:"planted_pgss";

SELECT pgsentinel_reset() IS NOT NULL AS reset;
SELECT pgs_wait_samples(5);
-- the server's partitions keep none of the schema's default privileges
CREATE ROLE regress_fleet_defacl;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO regress_fleet_defacl;
-- (a password libpq reads with a space in it: the user mapping gets it
-- whole, and the conninfo kept has none of it)
SELECT :'here' || ' dbname=' || current_database() || $$ password=pa\ SECRETAFTERSPACE$$ AS self \gset
SELECT pgsentinel_fleet_add('self', :'self', method => 'pull', pull_interval => '1 hour') > 0 AS added;
SELECT pgsentinel_fleet_add('self', :'self', method => 'pull');
SELECT name, method, conninfo ~ 'dbname=' AS conninfo, conninfo ~ 'SECRET|password' AS password_kept,
       keep_one_in, retention, removed
  FROM pgsentinel_fleet_status;
SELECT m.umoptions FROM pg_user_mappings m
  JOIN pgsentinel_fleet_server f ON f.foreign_server = m.srvname WHERE f.name = 'self';
SELECT rolsuper AS mallory_became_superuser FROM pg_roles WHERE rolname = 'regress_fleet_mallory';
SELECT count(*) AS fleet_partitions_readable_by_default
  FROM pg_class c
 WHERE c.relname ~ '^pgsentinel_fleet_.*_[0-9]+$' AND c.relkind IN ('r', 'p')
   AND has_table_privilege('regress_fleet_defacl', c.oid, 'SELECT');
SELECT count(*) > 0 AS fleet_partitions_made
  FROM pg_class c WHERE c.relname ~ '^pgsentinel_fleet_.*_[0-9]+$' AND c.relkind IN ('r', 'p');
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT ON TABLES FROM regress_fleet_defacl;
DROP OWNED BY regress_fleet_defacl;
DROP ROLE regress_fleet_defacl;
DROP FUNCTION public.pgsentinel_fleet_needs(text),
    public.pgsentinel_fleet_partitions(integer, text, text);
DROP ROLE regress_fleet_mallory;
-- a pull gives up on a source that does not answer (connect_timeout)
SELECT srvoptions @> '{connect_timeout=10}' AS connect_timeout
  FROM pg_foreign_server WHERE srvname LIKE 'pgsentinel\_fleet\_%';
-- its foreign tables: the rings' samples, rows and statements' deltas, and
-- pg_stat_statements (for the texts)
SELECT string_agg(regexp_replace(relname, '[0-9]+', 'N'), ', ' ORDER BY relname) AS foreign_tables
  FROM pg_class WHERE relkind = 'f' AND relname LIKE 'pgsentinel\_fleet\_%';
-- the archiver's tick (every 100 ms here) pulls a server added at once:
-- wait for that pull, then for samples and statements' readings it did not
-- take, so that this pull has some
SELECT pgs_wait_for('(SELECT last_pull IS NOT NULL FROM pgsentinel_fleet_server WHERE name = ''self'')');
SELECT pgs_wait_for($c$
  EXISTS (SELECT FROM pgsentinel_samples()
           WHERE sample_time > (SELECT coalesce(pulled_until, '-infinity')
                                  FROM pgsentinel_fleet_server WHERE name = 'self'))
  AND EXISTS (SELECT FROM pgsentinel_ring_statements
               WHERE queryid IS NOT NULL
                 AND ash_time > (SELECT coalesce(statements_pulled_until, '-infinity')
                                   FROM pgsentinel_fleet_server WHERE name = 'self'))$c$);
SELECT name, samples_seen > 0 AS pulled, samples_stored = samples_seen AS all_stored,
       statements_stored > 0 AS statements_pulled
  FROM pgsentinel_fleet_pull('self');
-- again at once: what it pulled again is not stored twice
SELECT name, samples_stored = samples_seen AS none_twice FROM pgsentinel_fleet_pull('self');
SELECT count(*) = count(DISTINCT sample_time) AS unique_samples,
       count(*) > 0 AS some
  FROM pgsentinel_fleet_sample_archive WHERE server = 'self';
-- the statements ring's deltas: each reading of a statement once, with its
-- watermark; the texts from the archive or pg_stat_statements
SELECT count(*) = count(DISTINCT (ash_time, userid, dbid, queryid, toplevel)) AS unique_deltas,
       count(*) FILTER (WHERE query IS NOT NULL) > 0 AS with_texts,
       max(ash_time) = (SELECT statements_pulled_until FROM pgsentinel_fleet_server
                         WHERE name = 'self') AS watermark
  FROM pgsentinel_fleet_statements WHERE server = 'self';
-- every pulled row is one of the ring's, with its weight
SELECT count(*) = 0 AS rows_match FROM (
  SELECT ash_time, pid, wait_event_type, wait_event, query, sample_period
    FROM pgsentinel_fleet_ash WHERE server = 'self'
  EXCEPT
  SELECT ash_time, pid, wait_event_type, wait_event, query, sample_period
    FROM pg_active_session_history) x;
SELECT server, aas >= 0 AS aas, coverage > 0 AS covered
  FROM pgsentinel_fleet_aas(now() - interval '1 hour', now());
SELECT rank, server FROM pgsentinel_fleet_top_servers(now() - interval '1 hour', now());
SELECT count(*) >= 0 AS statements, count(*) FILTER (WHERE calls > 0) >= 0 AS calls
  FROM pgsentinel_fleet_top_statements(server => 'self');
-- every report takes server => a fleet server: it reads that server's rows
-- in the repository (here the pulled copy of this server's ring), and
-- computes what the fleet's own reports compute from them
SELECT min(sample_time) AS w0, max(sample_time) + interval '1 microsecond' AS w1
  FROM pgsentinel_fleet_sample_archive WHERE server = 'self' \gset
SELECT round(a.db_time::numeric, 6) = round(f.db_time::numeric, 6) AS same_db_time,
       round(a.observed::numeric, 6) = round(f.observed::numeric, 6) AS same_observed,
       a.db_time > 0 AS some_load
  FROM pgsentinel_aas(:'w0', :'w1', server => 'self') a,
       pgsentinel_fleet_aas(:'w0', :'w1', server => 'self') f;
SELECT count(DISTINCT source) = 1 AS one_source, min(source) AS source
  FROM pgsentinel_ash(:'w0', :'w1', server => 'self');
SELECT (SELECT round(sum(db_time)::numeric, 6)
          FROM pgsentinel_top(:'w0', :'w1', 'wait_event', 1000, server => 'self'))
       = (SELECT round(sum(weight)::numeric, 6) FROM pgsentinel_fleet_ash
           WHERE server = 'self' AND ash_time >= :'w0' AND ash_time < :'w1'
             AND NOT pgsentinel_own_worker(backend_type)) AS top_sums_its_load;
SELECT count(*) > 0 AS samples FROM pgsentinel_samples_in(:'w0', :'w1', server => 'self');
-- Top SQL's calls are the server's statements history in the repository,
-- per second of the window (of the statements whose intervals are all in
-- it: one that began before it, or ends after it, counts for its share in
-- the window, as a statement's first interval since zeros at an earlier
-- sweep may, and a reading pulled after the last sample pulled)
SELECT count(*) FILTER (WHERE t.calls_per_s IS DISTINCT FROM
                              d.calls::float8 / extract(epoch FROM :'w1'::timestamptz - :'w0'::timestamptz)::float8)
         AS calls_differ
  FROM pgsentinel_top_statements(:'w0', :'w1', 1000, server => 'self') t
  LEFT JOIN (SELECT queryid, sum(calls) AS calls
               FROM pgsentinel_fleet_statements
              WHERE server = 'self' AND toplevel AND NOT reset
                AND prev_ash_time >= :'w0' AND ash_time <= :'w1'
              GROUP BY queryid) d ON d.queryid = t.queryid
 WHERE NOT EXISTS (SELECT FROM pgsentinel_fleet_statements x
                    WHERE x.server = 'self' AND x.queryid = t.queryid
                      AND x.toplevel AND NOT x.reset
                      AND ((x.ash_time > :'w0' AND x.prev_ash_time < :'w0')
                           OR (x.ash_time > :'w1' AND x.prev_ash_time < :'w1')));
SELECT split_part(pgsentinel_report(:'w0', :'w1', server => 'self'), E'\n', 2)
       ~ '^server self \(repository database contrib_regression\), PostgreSQL ' AS report_names_it;
SELECT (pgsentinel_report(:'w0', :'w1', format => 'json', server => 'self'))::jsonb ->> 'server' AS json_server;
SELECT pgsentinel_report(:'w0', :'w1', format => 'html', server => 'self') LIKE '%server self (repository%<svg %' AS html;
SELECT c LIKE 'DB load by wait class of server self, %' AS chart_names_it
  FROM pgsentinel_chart(:'w0', :'w1', server => 'self') c LIMIT 1;
-- a name the repository does not know; a caller who may not read the
-- fleet (its own server's reports still work for it)
SELECT * FROM pgsentinel_aas(server => 'nope');
CREATE ROLE regress_fleet_reader;
SET ROLE regress_fleet_reader;
SELECT * FROM pgsentinel_aas(server => 'self');
SELECT pgsentinel_report(server => 'self');
SELECT count(*) = 1 AS own_reports_work FROM pgsentinel_aas();
RESET ROLE;
DROP ROLE regress_fleet_reader;
SELECT pgsentinel_fleet_tick() >= 0 AS ticked;
-- retention: a day past it goes from every table partitioned by day.  The
-- archiver ticks too (every 100 ms here): the day is made while another
-- session holds the server's tables (inserting, as an apply worker does),
-- so that no tick can drop it before it is looked at.  A tick does not
-- wait for them (statement_timeout: a tick that waited would fail) but
-- leaves the day to a later tick, which drops it once they are free.
SELECT to_char(current_date - 40, 'YYYYMMDD') AS old_day \gset
SELECT fleet_ext.dblink_connect('fleet_holder', :'here' || ' dbname=' || current_database());
SELECT fleet_ext.dblink_exec('fleet_holder', format(
         'BEGIN; LOCK TABLE ONLY %1$I.pgsentinel_fleet_batch_%2$s, %1$I.pgsentinel_fleet_session_%2$s,
                 %1$I.pgsentinel_fleet_text_%2$s, %1$I.pgsentinel_fleet_statement_batch_%2$s,
                 %1$I.pgsentinel_fleet_statement_text_%2$s IN ROW EXCLUSIVE MODE',
         current_schema(), server_id))
  FROM pgsentinel_fleet_server WHERE name = 'self';
SELECT pgsentinel_fleet_partitions((SELECT server_id FROM pgsentinel_fleet_server WHERE name = 'self'),
                                   current_date - 40, current_date - 40) AS old_day_made;
SET statement_timeout = '60s';
SELECT pgsentinel_fleet_tick() >= 0 AS ticked;
RESET statement_timeout;
-- (the day's rollup partitions, which the holder does not lock, may be
-- dropped by this tick or, when the archiver's tick holds them, by a later)
SELECT string_agg(regexp_replace(relname, '_[0-9]+_[0-9]{8}$', '_N_DAY'), ', ' ORDER BY relname) AS old_day_left
  FROM pg_class WHERE relname LIKE 'pgsentinel\_fleet\_%\_' || :'old_day'
   AND relname !~ '^pgsentinel_fleet_rollup_';
SELECT fleet_ext.dblink_exec('fleet_holder', 'COMMIT');
SELECT fleet_ext.dblink_disconnect('fleet_holder');
SELECT pgsentinel_fleet_tick() >= 0 AS ticked;
SELECT pgs_wait_for(format('NOT EXISTS (SELECT FROM pg_class WHERE relname LIKE %L)',
                           'pgsentinel\_fleet\_%\_' || :'old_day'));
-- a day dropped by another tick after this one listed it is skipped: an
-- event trigger drops the samples' day when the tick drops the first one
-- (the activities'), all in this transaction so that no other tick sees
-- the day
CREATE FUNCTION fleet_drop_ahead() RETURNS event_trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('fleet_test.drop_ahead', true) = 'on' THEN
        PERFORM set_config('fleet_test.drop_ahead', 'off', true);
        EXECUTE 'DROP TABLE ' || current_setting('fleet_test.sample_day');
    END IF;
END $$;
CREATE EVENT TRIGGER fleet_drop_ahead ON sql_drop EXECUTE FUNCTION fleet_drop_ahead();
BEGIN;
SELECT pgsentinel_fleet_partitions((SELECT server_id FROM pgsentinel_fleet_server WHERE name = 'self'),
                                   current_date - 40, current_date - 40) AS old_day_made;
SELECT set_config('fleet_test.sample_day',
                  format('%I.%I', current_schema(), 'pgsentinel_fleet_batch_' || server_id || '_' || :'old_day'),
                  true) IS NOT NULL AS set,
       set_config('fleet_test.drop_ahead', 'on', true) AS drop_ahead
  FROM pgsentinel_fleet_server WHERE name = 'self';
SELECT pgsentinel_fleet_tick() >= 0 AS ticked;
SELECT current_setting('fleet_test.drop_ahead') AS drop_ahead,
       count(*) AS old_day_left
  FROM pg_class WHERE relname LIKE 'pgsentinel\_fleet\_%\_' || :'old_day';
COMMIT;
DROP EVENT TRIGGER fleet_drop_ahead;
DROP FUNCTION fleet_drop_ahead();
SELECT pgsentinel_fleet_pull('nope');
SELECT * FROM pgsentinel_fleet_aas('2026-01-01 01:00+00', '2026-01-01 00:00+00');
-- a relation under a foreign table's name that another role made while
-- pgsentinel's was gone is refused by the pull, never read
SELECT c.relname AS pgss_table FROM pg_class c JOIN pgsentinel_fleet_server f
    ON c.relname = f.foreign_server || '_pgss' WHERE f.name = 'self' \gset
ALTER FOREIGN TABLE :"pgss_table" RENAME TO regress_kept_pgss;
CREATE ROLE regress_fleet_planter;
CREATE VIEW public.:"pgss_table" AS SELECT 1 AS x;
ALTER VIEW public.:"pgss_table" OWNER TO regress_fleet_planter;
SELECT pg_temp.fleet_error($$SELECT count(*) FROM pgsentinel_fleet_pull('self')$$);
DROP VIEW public.:"pgss_table";
DROP ROLE regress_fleet_planter;
ALTER FOREIGN TABLE regress_kept_pgss RENAME TO :"pgss_table";
SELECT name FROM pgsentinel_fleet_pull('self');

-- removed, history kept: the name can come back and goes on
SELECT pgsentinel_fleet_remove('self');
SELECT name, removed IS NOT NULL AS removed, foreign_server FROM pgsentinel_fleet_status;
SELECT count(*) FROM pg_foreign_server WHERE srvname LIKE 'pgsentinel_fleet_%';
SELECT count(*) > 0 AS history_kept FROM pgsentinel_fleet_sample_archive WHERE server = 'self';
SELECT pgsentinel_fleet_add('self', :'here' || ' dbname=' || current_database(),
                            method => 'pull') > 0 AS added_again;
SELECT (SELECT pulled_until FROM pgsentinel_fleet_server WHERE name = 'self')
       = (SELECT max(sample_time) FROM pgsentinel_fleet_sample_archive) AS goes_on_after_its_newest;
-- removed with its history: its partitions go
SELECT pgsentinel_fleet_remove('self', keep_history => false);
SELECT count(*) FROM pgsentinel_fleet_status;
SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_(batch|session|text|wait_event|statement_batch|statement_text)_[0-9]';
SELECT count(*) FROM pg_class WHERE relname ~ '^pgsentinel_fleet_[0-9]+_';
SELECT pgsentinel_fleet_remove('self');

DROP EXTENSION postgres_fdw;
DROP EXTENSION dblink;
DROP SCHEMA fleet_ext;
RESET client_min_messages;
