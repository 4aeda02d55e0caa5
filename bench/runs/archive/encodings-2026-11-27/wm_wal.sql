-- WAL of the watermark alone: 40 steps that only update wm and commit
\set ON_ERROR_STOP 1
CHECKPOINT;
CALL replay('none', 1, 40, 1);
SELECT pg_current_wal_insert_lsn() AS l0 \gset
CALL replay('none', 1, 40, 1);
SELECT pg_current_wal_insert_lsn() AS l1 \gset
SELECT pg_wal_lsn_diff(:'l1', :'l0') / 40 AS wal_bytes_per_step_watermark_and_commit;
