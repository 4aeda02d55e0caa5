-- the real archive (pgsentinel's own tables, whole run including idle time and rollups)
SELECT CASE WHEN c.relname ~ '^pgsentinel_rollup' THEN 'rollups (all)' ELSE regexp_replace(c.relname, '_[0-9_]+$', '') END AS tab,
       sum(pg_total_relation_size(c.oid)) AS bytes
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'public' AND c.relkind = 'r'
   AND (c.relname LIKE 'pgsentinel\_archive\_%' OR c.relname LIKE 'pgsentinel\_rollup\_%')
 GROUP BY 1 ORDER BY 2 DESC;
SELECT samples_archived, rows_archived,
       (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind = 'r'
           AND (c.relname LIKE 'pgsentinel\_archive\_%' OR c.relname LIKE 'pgsentinel\_rollup\_%')) AS total_bytes,
       round((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind = 'r'
           AND (c.relname LIKE 'pgsentinel\_archive\_%' OR c.relname LIKE 'pgsentinel\_rollup\_%'))::numeric / rows_archived, 1) AS bytes_per_row
  FROM pgsentinel_archive_state;
