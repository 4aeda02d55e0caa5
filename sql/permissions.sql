--
-- Who may use what (docs/security.md): the two views, their functions and
-- the helpers are for everybody, as pg_stat_activity and
-- pg_stat_statements are (the C code hides other roles' sessions and
-- statements the way they do); pgsentinel_reset() is for superusers and
-- the roles they grant it to, as pg_stat_statements_reset(); the
-- foreign-data wrapper's functions, the foreign table and the server are
-- for nobody but superusers.  A new object of the extension shows up in
-- the table below: state its rights.
--

-- The rights of PUBLIC, pg_monitor and pg_read_all_stats on every member.
CREATE TEMP VIEW pgs_acl AS
SELECT CASE d.classid
         WHEN 'pg_proc'::regclass THEN
           'function ' || p.proname || '(' || oidvectortypes(p.proargtypes) || ')'
         WHEN 'pg_class'::regclass THEN
           CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'f' THEN 'foreign table '
                ELSE 'relation ' END || c.relname
         ELSE pg_describe_object(d.classid, d.objid, 0)
       END AS member,
       r.role,
       CASE d.classid
         WHEN 'pg_proc'::regclass THEN has_function_privilege(r.role, d.objid, 'EXECUTE')
         WHEN 'pg_class'::regclass THEN has_table_privilege(r.role, d.objid, 'SELECT')
         WHEN 'pg_foreign_server'::regclass THEN has_server_privilege(r.role, d.objid, 'USAGE')
         WHEN 'pg_foreign_data_wrapper'::regclass THEN
           has_foreign_data_wrapper_privilege(r.role, d.objid, 'USAGE')
       END AS allowed
FROM pg_depend d
LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
CROSS JOIN (VALUES ('public'), ('pg_monitor'), ('pg_read_all_stats')) r(role)
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgsentinel')
  -- (PostgreSQL 18 lists the row types of our relations, and their
  -- arrays, as members too: they come and go with the relations)
  AND NOT EXISTS (SELECT 1 FROM pg_type t
                  LEFT JOIN pg_type e ON e.oid = t.typelem
                  WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                    AND (t.typrelid <> 0 OR e.typrelid <> 0));

-- EXECUTE for functions, SELECT for views and tables, USAGE for the server
-- and the wrapper.
SELECT member,
       bool_or(allowed) FILTER (WHERE role = 'public') AS public,
       bool_or(allowed) FILTER (WHERE role = 'pg_monitor') AS pg_monitor,
       bool_or(allowed) FILTER (WHERE role = 'pg_read_all_stats') AS pg_read_all_stats
FROM pgs_acl GROUP BY member ORDER BY member;

-- A database updated from 1.4.0 ends with the same rights.
CREATE TEMP TABLE pgs_fresh_acl AS SELECT * FROM pgs_acl;
DROP EXTENSION pgsentinel;
CREATE EXTENSION pgsentinel VERSION '1.4.0';
ALTER EXTENSION pgsentinel UPDATE;
SELECT * FROM pgs_acl EXCEPT SELECT * FROM pgs_fresh_acl;
SELECT * FROM pgs_fresh_acl EXCEPT SELECT * FROM pgs_acl;

-- An ordinary role may read and call what everybody may, and gets a
-- permission error for the rest.
CREATE ROLE regress_pgs_reader;
CREATE SCHEMA pgs_reader_schema AUTHORIZATION regress_pgs_reader;
SET ROLE regress_pgs_reader;
SELECT count(*) >= 0 AS reads FROM pg_active_session_history;
SELECT count(*) >= 0 AS reads FROM pg_stat_statements_history;
SELECT count(*) >= 0 AS calls FROM pg_active_session_history();
SELECT count(*) >= 0 AS calls FROM pg_stat_statements_history();
SELECT count(*) = 1 AS calls FROM pgsentinel_status();
SELECT count(*) >= 0 AS calls FROM pg_stat_statements_history_deltas();
SELECT count(*) >= 0 AS calls FROM pg_stat_statements_history_rates();
SELECT count(*) FROM pgsentinel_ash_ring;
SELECT pgsentinel_fdw_validator('{}', 'pg_foreign_table'::regclass);
SELECT pgsentinel_reset();
CREATE FOREIGN TABLE pgs_reader_schema.my_ring (ash_time timestamptz)
  SERVER pgsentinel_server;
-- the fleet: the ring's samples for everybody; the repository's
-- servers, rows and reports for pg_read_all_stats; its setup for superusers
SELECT count(*) >= 0 AS reads FROM pgsentinel_ring_samples;
SELECT count(*) FROM pgsentinel_fleet_ash;
SELECT count(*) FROM pgsentinel_fleet_batch;
SELECT count(*) FROM pgsentinel_fleet_aas();
SELECT pgsentinel_fleet_add('x', 'dbname=x');
SELECT pgsentinel_fleet_tick();
RESET ROLE;
GRANT pg_read_all_stats TO regress_pgs_reader;
SET ROLE regress_pgs_reader;
SELECT count(*) >= 0 AS reads FROM pgsentinel_fleet_ash;
SELECT count(*) >= 0 AS reads FROM pgsentinel_fleet_status;
SELECT count(*) >= 0 AS calls FROM pgsentinel_fleet_aas();
SELECT count(*) >= 0 AS calls FROM pgsentinel_fleet_top_servers();
SELECT count(*) >= 0 AS calls FROM pgsentinel_fleet_top_statements();
RESET ROLE;
DROP SCHEMA pgs_reader_schema;
DROP ROLE regress_pgs_reader;
