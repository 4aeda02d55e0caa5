--
-- Drop-in for pgsentinel 1.4 and 1.5: an installation of 1.4.0 works with
-- this library as it is, and the update chain 1.4.0 -> 1.5.0 -> 1.5.1 ->
-- 2.0.0 -> 2.1.0 ends exactly where a fresh installation does.
--
SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel';

CREATE TEMP TABLE fresh_members AS
SELECT pg_describe_object(classid, objid, 0) AS member
FROM pg_depend
WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgsentinel');
CREATE TEMP TABLE fresh_columns AS
SELECT attrelid::regclass::text AS rel, attnum, attname, atttypid::regtype::text AS type
FROM pg_attribute
WHERE attrelid IN ('pg_active_session_history'::regclass, 'pg_stat_statements_history'::regclass)
  AND attnum > 0;

DROP EXTENSION pgsentinel;
CREATE EXTENSION pgsentinel VERSION '1.4.0';

-- 1.4.0's objects, read through this library: 1.4's columns only.
SELECT count(*) AS ash_columns FROM pg_attribute
WHERE attrelid = 'pg_active_session_history'::regclass AND attnum > 0;
SELECT pgs_sleep_until_sampled();
SELECT wait_event_type, wait_event, cmdtype, state, queryid IS NOT NULL AS has_queryid
FROM pg_active_session_history
WHERE pid = pg_backend_pid() AND wait_event = 'PgSleep'
ORDER BY ash_time DESC -- the call above's, not an older sleep's
LIMIT 1;
SELECT count(*) >= 0 AS statements_history_readable FROM pg_stat_statements_history;
SELECT pid = pg_backend_pid() AS own_pid, queryid IS NOT NULL AS has_queryid, query, cmdtype
FROM get_parsedinfo(pg_backend_pid());
-- Of another session (the statements worker's, a superuser's), a role that
-- may not see it gets neither its query id, nor its text, nor its command
-- type, as pg_stat_activity would show it.
CREATE ROLE regress_pgs_carol;
SELECT pgs_wait_for($$EXISTS (SELECT 1 FROM pg_stat_activity a, get_parsedinfo(a.pid)
                           WHERE a.backend_type = 'pgsentinel statements')$$);
SELECT pid AS sw_pid FROM pg_stat_activity WHERE backend_type = 'pgsentinel statements' \gset
SET ROLE regress_pgs_carol;
SELECT pid = :sw_pid AS its_pid, queryid IS NULL AS queryid_hidden, query,
       cmdtype IS NULL AS cmdtype_hidden
FROM get_parsedinfo(:sw_pid);
RESET ROLE;
DROP ROLE regress_pgs_carol;

-- A database still at 1.0 or 1.3.1 (same objects as 1.4.0; their update
-- scripts changed no SQL) follows the chain too.
UPDATE pg_extension SET extversion = '1.0' WHERE extname = 'pgsentinel';
ALTER EXTENSION pgsentinel UPDATE TO '1.4.0';
SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel';

ALTER EXTENSION pgsentinel UPDATE TO '1.5.0';
SELECT attnum, attname FROM pg_attribute
WHERE attrelid = 'pg_active_session_history'::regclass AND attname IN ('queryid', 'nested_queryid', 'backend_type')
ORDER BY attnum;
SELECT count(*) > 0 AS nested_queryid_filled FROM pg_active_session_history WHERE nested_queryid IS NOT NULL;

ALTER EXTENSION pgsentinel UPDATE TO '1.5.1';
SELECT has_function_privilege('public', 'get_parsedinfo(int)', 'EXECUTE') AS public_may_call_get_parsedinfo;

-- Views users built on the history views survive the update to 2.0.0
-- (its views gain columns in place: they are not dropped).
CREATE VIEW my_waits AS
  SELECT ash_time, wait_event_type, wait_event FROM pg_active_session_history;
CREATE VIEW my_statements AS
  SELECT ash_time, queryid, calls FROM pg_stat_statements_history;

ALTER EXTENSION pgsentinel UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pgsentinel';
SELECT count(*) > 0 AS my_waits_reads FROM my_waits;
SELECT count(*) >= 0 AS my_statements_reads FROM my_statements;
DROP VIEW my_waits, my_statements;

-- Same objects and same columns as the fresh installation.
SELECT member AS only_in_updated FROM (
  SELECT pg_describe_object(classid, objid, 0) AS member
  FROM pg_depend
  WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgsentinel')
  EXCEPT SELECT member FROM fresh_members) d;
SELECT member AS only_in_fresh FROM (
  SELECT member FROM fresh_members
  EXCEPT
  SELECT pg_describe_object(classid, objid, 0)
  FROM pg_depend
  WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgsentinel')) d;
SELECT count(*) AS column_differences FROM (
  (SELECT attrelid::regclass::text, attnum, attname, atttypid::regtype::text
   FROM pg_attribute
   WHERE attrelid IN ('pg_active_session_history'::regclass, 'pg_stat_statements_history'::regclass)
     AND attnum > 0
   EXCEPT SELECT * FROM fresh_columns)
  UNION ALL
  (SELECT * FROM fresh_columns
   EXCEPT
   SELECT attrelid::regclass::text, attnum, attname, atttypid::regtype::text
   FROM pg_attribute
   WHERE attrelid IN ('pg_active_session_history'::regclass, 'pg_stat_statements_history'::regclass)
     AND attnum > 0)) d;

-- A view declaring a column this library does not know gets a clear error.
CREATE FUNCTION pgs_bad_decl(OUT ash_time timestamptz, OUT no_such_column int)
RETURNS SETOF record AS 'pgsentinel', 'pg_active_session_history' LANGUAGE C;
SELECT * FROM pgs_bad_decl();
DROP FUNCTION pgs_bad_decl();
CREATE FUNCTION pgs_bad_type(OUT ash_time timestamptz, OUT pid text)
RETURNS SETOF record AS 'pgsentinel', 'pg_active_session_history' LANGUAGE C;
SELECT * FROM pgs_bad_type();
DROP FUNCTION pgs_bad_type();
