-- the report's table: sizes read now (cand_size: heap + TOAST + indexes,
-- btree metapages and BRIN left out of "used"), WAL from the replays
WITH n AS (SELECT (SELECT count(*) FROM st) AS rows, (SELECT count(*) FROM smp2) AS samples),
sz AS (SELECT c.cand, s.tbl, sum(s.total) AS total, sum(s.used) AS used,
              bool_or(s.tbl ~ '_(wait|state|sess|stmt|text|tpl)$' AND s.tbl NOT IN ('a_text')) AS dict
         FROM (SELECT DISTINCT cand FROM results) c, cand_size(c.cand) s GROUP BY c.cand, s.tbl),
szc AS (SELECT cand, sum(total) AS total, sum(used) AS used,
               sum(used) FILTER (WHERE NOT dict) AS main_used, sum(used) FILTER (WHERE dict) AS dict_used
          FROM sz GROUP BY cand)
SELECT r.cand,
       round(z.used::numeric / n.rows, 1) AS b_row,
       round(z.main_used::numeric / n.rows, 1) AS main_b_row,
       z.dict_used AS dict_bytes,
       round(z.total::numeric / n.rows, 1) AS alloc_b_row,
       round(z.used::numeric / n.samples, 0) AS b_sample,
       round(max(r.wal) FILTER (WHERE NOT r.ckpt)::numeric / max(r.samples), 0) AS wal_sample,
       round(max(r.wal) FILTER (WHERE r.ckpt)::numeric / max(r.samples), 0) AS wal_sample_ckpt,
       max(r.wal_fpi) FILTER (WHERE r.ckpt) AS fpi_after_ckpt,
       max(r.diff1) AS d1, max(r.diff2) AS d2,
       round((max(r.rebuild_ms) / max(r.rebuilt_samples) * 1000)::numeric, 0) AS ms_per_1000_samples
  FROM results r JOIN szc z USING (cand), n
 GROUP BY r.cand, n.rows, n.samples, z.used, z.main_used, z.dict_used, z.total ORDER BY min(r.at);
SELECT (SELECT count(*) FROM st) AS rows, (SELECT count(*) FROM smp2) AS samples,
       round((SELECT count(*) FROM st)::numeric / (SELECT count(*) FROM smp2), 2) AS rows_per_sample,
       (SELECT max(samples) FROM results) AS wal_window_samples, (SELECT max(rows) FROM results) AS wal_window_rows;
