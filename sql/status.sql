--
-- pgsentinel_status(): one call that says whether sampling works.
--
SELECT u.name, format_type(u.type, NULL)
FROM pg_proc p,
     unnest(p.proargnames, p.proallargtypes::oid[]) WITH ORDINALITY AS u(name, type, i)
WHERE p.oid = 'pgsentinel_status'::regproc
ORDER BY u.i;

SELECT pgs_wait_samples(3);

-- The worker is running, is the backend pg_stat_activity shows, and samples.
SELECT s.worker_pid = a.pid AS worker_is_pgsentinel_backend,
       a.backend_type,
       s.worker_started <= now() AS started_in_past,
       s.samples_taken >= 3 AS sampling,
       s.last_sample_time > now() - interval '1 min' AS recent,
       s.last_sample_us >= 0 AND s.max_sample_us >= s.last_sample_us AS timing,
       s.ash_capacity, s.ash_rows <= s.ash_capacity AS rows_fit,
       s.ash_rows_written >= s.ash_rows AS written,
       s.text_area_size, s.text_area_used <= s.text_area_size AS text_fits,
       s.sampling_period, s.track_idle_trans,
       s.ash_row_bytes <= 208 AS compact_rows,
       s.shmem_bytes <= 16 * 1024 * 1024 AS within_16mb
FROM pgsentinel_status() s
JOIN pg_stat_activity a ON a.pid = s.worker_pid;

-- One shared-memory allocation, visible by name, of the size status reports.
SELECT count(*) AS allocations, bool_and(size >= (SELECT shmem_bytes FROM pgsentinel_status())) AS sized
FROM pg_shmem_allocations WHERE name = 'pgsentinel';

-- With history present, the diagnosis is ok and the oldest row is known.
SELECT pgs_spin_until_sampled();
SELECT diagnosis LIKE 'ok%' AS diagnosis_ok, oldest_row_time <= now() AS oldest_known,
       oldest_row_time = (SELECT min(ash_time) FROM pg_active_session_history) AS oldest_matches_view
FROM pgsentinel_status();

-- Rows in the ring match the view.
SELECT (SELECT count(*) FROM pg_active_session_history) >= s.ash_rows AS view_has_ring_rows
FROM pgsentinel_status() s;

-- A function another role creates in the extension's schema under one of
-- its names, with defaults, would make pgsentinel's calls of that name
-- ambiguous: pgsentinel's event trigger refuses it, made or renamed.
CREATE ROLE regress_pgs_overloader;
GRANT CREATE ON SCHEMA public TO regress_pgs_overloader;
SET ROLE regress_pgs_overloader;
CREATE FUNCTION public.pgsentinel_history_id(x integer DEFAULT 0) RETURNS bigint
LANGUAGE sql AS 'SELECT 0::bigint';
CREATE FUNCTION public.pgs_overload(x integer DEFAULT 0) RETURNS bigint
LANGUAGE sql AS 'SELECT 0::bigint';
ALTER FUNCTION public.pgs_overload(integer) RENAME TO pgsentinel_samples;
CREATE PROCEDURE public.pgsentinel_samples(x integer DEFAULT 0) LANGUAGE sql AS '';
-- Nor one taking the leading arguments of a function of ours that has
-- defaults (the shape of a call that leaves them out): none, or some.
CREATE FUNCTION public.pgsentinel_fleet_node_keep() RETURNS integer
LANGUAGE sql AS 'SELECT 0';
CREATE FUNCTION public.pgsentinel_aas(since timestamptz) RETURNS integer
LANGUAGE sql AS 'SELECT 0';
-- (otherwise, without defaults it cannot be chosen over ours: our calls
-- are exact)
CREATE FUNCTION public.pgsentinel_history_id(x integer) RETURNS bigint
LANGUAGE sql AS 'SELECT 0::bigint';
CREATE FUNCTION public.pgsentinel_aas(since integer) RETURNS integer
LANGUAGE sql AS 'SELECT 0';
DROP FUNCTION public.pgsentinel_aas(integer);
CREATE OR REPLACE FUNCTION public.pgsentinel_history_id(x integer DEFAULT 0) RETURNS bigint
LANGUAGE sql AS 'SELECT 0::bigint';
DROP FUNCTION public.pgsentinel_history_id(integer), public.pgs_overload(integer);
RESET ROLE;
-- One made while a superuser had disabled the trigger is named in the
-- diagnosis, with what to do.
ALTER EVENT TRIGGER pgsentinel_refuse_overloads DISABLE;
SET ROLE regress_pgs_overloader;
CREATE FUNCTION public.pgsentinel_history_id(x integer DEFAULT 0) RETURNS bigint
LANGUAGE sql AS 'SELECT 0::bigint';
RESET ROLE;
ALTER EVENT TRIGGER pgsentinel_refuse_overloads ENABLE;
SELECT regexp_replace(diagnosis, '^.*?; (1 function)', '\1') AS diagnosis
  FROM pgsentinel_status();
DROP FUNCTION public.pgsentinel_history_id(integer);
REVOKE CREATE ON SCHEMA public FROM regress_pgs_overloader;
DROP ROLE regress_pgs_overloader;
SELECT diagnosis !~ 'named like pgsentinel' AS not_named_any_more FROM pgsentinel_status();
