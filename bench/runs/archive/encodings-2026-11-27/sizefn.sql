-- cand_size() alone (also in cands.sql)
CREATE OR REPLACE FUNCTION cand_size(p text)
RETURNS TABLE (tbl text, part text, total bigint, used bigint) LANGUAGE sql AS $$
WITH t AS (SELECT c.tgt, c.tgt::regclass::oid AS oid FROM cand_tables c WHERE c.cand = p),
rel AS (
  SELECT t.tgt, 'heap' AS part, t.oid FROM t
  UNION ALL SELECT t.tgt, 'toast', r.reltoastrelid FROM t JOIN pg_class r ON r.oid = t.oid WHERE r.reltoastrelid <> 0
  UNION ALL SELECT t.tgt, 'toast index', i.indexrelid FROM t JOIN pg_class r ON r.oid = t.oid
            JOIN pg_index i ON i.indrelid = r.reltoastrelid WHERE r.reltoastrelid <> 0
  UNION ALL SELECT t.tgt, 'index ' || (SELECT amname FROM pg_am a JOIN pg_class ic ON ic.relam = a.oid WHERE ic.oid = i.indexrelid),
            i.indexrelid FROM t JOIN pg_index i ON i.indrelid = t.oid)
SELECT tgt, part, sum(pg_relation_size(oid, 'main') + pg_relation_size(oid, 'fsm') + pg_relation_size(oid, 'vm'))::bigint,
       sum(CASE WHEN part = 'index brin' THEN 0 WHEN pg_relation_size(oid) = 0 THEN 0
                WHEN part IN ('index btree', 'toast index')  -- less the metapage
                THEN greatest((SELECT s.table_len - s.free_space FROM pgstattuple(oid) s) - 8192, 0)
                ELSE (SELECT s.table_len - s.free_space FROM pgstattuple(oid) s) END)::bigint
  FROM rel GROUP BY tgt, part ORDER BY tgt, part $$;
