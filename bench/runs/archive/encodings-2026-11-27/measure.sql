-- one measurement: psql -v cand=NAME -v maker='SELECT make_...' -v step=N -v ckpt=true|false -v rebuild='rebuild_x(...)'
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT max(ord) AS n, 60 * (max(ord) / 120) AS h FROM smp2 \gset
:maker ;
UPDATE wm SET last_ord = 0, steps = 0;
CHECKPOINT;
CALL replay(:'cand', 1, :h, :step);
\if :ckpt
CHECKPOINT;
\endif
SELECT pg_current_wal_insert_lsn() AS l0 \gset
CALL replay(:'cand', :h + 1, :n, :step);
SELECT pg_current_wal_insert_lsn() AS l1 \gset
SELECT pg_sleep(0.2);
INSERT INTO res_wal SELECT :'cand', :ckpt, "resource_manager/record_type", count, record_size, fpi_size, combined_size
  FROM pg_get_wal_stats(:'l0', least(:'l1'::pg_lsn, pg_current_wal_flush_lsn()));
INSERT INTO results (cand, ckpt, samples, rows, wal, wal_fpi, wal_records, total, used)
SELECT :'cand', :ckpt, :n - :h, (SELECT count(*) FROM st WHERE ord > :h),
       pg_wal_lsn_diff(:'l1', :'l0'),
       (SELECT sum(fpi) FROM res_wal WHERE cand = :'cand' AND ckpt = :ckpt),
       (SELECT sum(count) FROM res_wal WHERE cand = :'cand' AND ckpt = :ckpt),
       (SELECT sum(total) FROM cand_size(:'cand')), (SELECT sum(used) FROM cand_size(:'cand'));
