-- Staging in the scratch database "enc": from the ground truth (rows, smp)
-- the per-row ids, deltas and text templates every candidate is built from.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgstattuple;
CREATE EXTENSION IF NOT EXISTS pg_walinspect;

-- microseconds a - b, exact (extract(epoch) is numeric), and back
CREATE OR REPLACE FUNCTION us(a timestamptz, b timestamptz) RETURNS int8
IMMUTABLE LANGUAGE sql RETURN ((extract(epoch FROM a) - extract(epoch FROM b)) * 1000000)::int8;
CREATE OR REPLACE FUNCTION plus_us(a timestamptz, d int8) RETURNS timestamptz
IMMUTABLE LANGUAGE sql RETURN a + d * interval '1 microsecond';

-- literals: quoted strings and numbers not inside identifiers
CREATE OR REPLACE FUNCTION lit_re() RETURNS text IMMUTABLE LANGUAGE sql
RETURN $re$('(?:[^']|'')*'|(?<![A-Za-z0-9_$.])-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?![A-Za-z0-9_$]))$re$;
CREATE OR REPLACE FUNCTION tpl(t text) RETURNS text IMMUTABLE LANGUAGE sql
RETURN regexp_replace(t, lit_re(), E'\x01', 'g');
CREATE OR REPLACE FUNCTION par(t text) RETURNS text IMMUTABLE LANGUAGE sql
RETURN (SELECT string_agg(m[1], E'\x02' ORDER BY o)
          FROM regexp_matches(t, lit_re(), 'g') WITH ORDINALITY x(m, o));
-- template + parameters -> text
CREATE OR REPLACE FUNCTION fill(tp text, pa text) RETURNS text IMMUTABLE LANGUAGE sql
RETURN CASE WHEN tp IS NULL THEN NULL
            WHEN pa IS NULL THEN tp
            ELSE (SELECT string_agg(t.piece || coalesce(p.v, ''), '' ORDER BY t.i)
                    FROM unnest(string_to_array(tp, E'\x01')) WITH ORDINALITY t(piece, i)
                    LEFT JOIN unnest(string_to_array(pa, E'\x02')) WITH ORDINALITY p(v, i)
                      USING (i)) END;

DROP TABLE IF EXISTS smp2, st0, st, texts, tpls CASCADE;
CREATE TABLE smp2 AS
SELECT s.*, row_number() OVER (ORDER BY sample_id)::int AS ord,
       timezone('UTC', sample_time)::date AS day
  FROM smp s;

CREATE TABLE st0 AS
SELECT r.*, s.ord, s.day,
       tpl(r.top_level_query) AS top_tpl, par(r.top_level_query) AS top_par,
       r.query IS NOT DISTINCT FROM r.top_level_query AS q_same,
       CASE WHEN r.query IS DISTINCT FROM r.top_level_query THEN tpl(r.query) END AS q_tpl,
       CASE WHEN r.query IS DISTINCT FROM r.top_level_query THEN par(r.query) END AS q_par
  FROM rows r JOIN smp2 s USING (sample_id);

-- texts and templates, per day
CREATE TABLE texts AS
SELECT day, text, (row_number() OVER (PARTITION BY day ORDER BY min(ord), text))::int AS text_id,
       min(ord) AS first_ord
  FROM (SELECT day, ord, top_level_query AS text FROM st0
        UNION ALL SELECT day, ord, query FROM st0) x
 WHERE text IS NOT NULL GROUP BY day, text;
CREATE TABLE tpls AS
SELECT day, tpl, (row_number() OVER (PARTITION BY day ORDER BY min(ord), tpl))::int AS tpl_id,
       min(ord) AS first_ord
  FROM (SELECT day, ord, top_tpl AS tpl FROM st0
        UNION ALL SELECT day, ord, q_tpl FROM st0) x
 WHERE tpl IS NOT NULL GROUP BY day, tpl;

CREATE TABLE st AS
SELECT x.*,
       (dense_rank() OVER (PARTITION BY x.day ORDER BY datid, datname, pid, leader_pid, usesysid,
            usename, application_name, client_addr, client_hostname, client_port,
            backend_start, backend_type))::int AS sess_id,
       (dense_rank() OVER (PARTITION BY x.day ORDER BY queryid, nested_queryid, cmdtype,
            top_text_id, q_text_id))::int AS stmt_b,
       (dense_rank() OVER (PARTITION BY x.day ORDER BY queryid, nested_queryid, cmdtype,
            top_tpl_id, q_tpl_id, q_same))::int AS stmt_d,
       (dense_rank() OVER (ORDER BY wait_event_type, wait_event))::int2 AS wait_id,
       (dense_rank() OVER (ORDER BY state))::int2 AS state_id,
       (blockers <> 0 OR blockerpid IS NOT NULL OR blocker_state IS NOT NULL
        OR blocker_usesysid IS NOT NULL OR blocking_pids <> '{}') AS has_bl
  FROM (SELECT s.*, t1.text_id AS top_text_id, t2.text_id AS q_text_id,
               p1.tpl_id AS top_tpl_id, p2.tpl_id AS q_tpl_id
          FROM st0 s
          LEFT JOIN texts t1 ON t1.day = s.day AND t1.text = s.top_level_query
          LEFT JOIN texts t2 ON t2.day = s.day AND t2.text = s.query
          LEFT JOIN tpls p1 ON p1.day = s.day AND p1.tpl = s.top_tpl
          LEFT JOIN tpls p2 ON p2.day = s.day AND p2.tpl = s.q_tpl) x;
CREATE INDEX ON st (ord);
ANALYZE st;

-- dictionaries' sources: each entry with the first sample that needs it
DROP TABLE IF EXISTS src_wait, src_state, src_sess, src_text, src_tpl, src_stmt_b, src_stmt_d;
CREATE TABLE src_wait AS SELECT DISTINCT ON (wait_id) wait_id, wait_event_type, wait_event,
       min(ord) OVER (PARTITION BY wait_id) AS first_ord FROM st;
CREATE TABLE src_state AS SELECT DISTINCT ON (state_id) state_id, state,
       min(ord) OVER (PARTITION BY state_id) AS first_ord FROM st;
CREATE TABLE src_sess AS SELECT DISTINCT ON (day, sess_id) day, sess_id,
       hashtextextended(ROW(datid, datname, pid, leader_pid, usesysid, usename, application_name,
           client_addr, client_hostname, client_port, backend_start, backend_type)::text, 0) AS hash,
       datid, datname, pid, leader_pid, usesysid, usename, application_name, client_addr,
       client_hostname, client_port, backend_start, backend_type,
       min(ord) OVER (PARTITION BY day, sess_id) AS first_ord FROM st;
CREATE TABLE src_text AS SELECT day, text_id, hashtextextended(text, 0) AS hash, text, first_ord FROM texts;
CREATE TABLE src_tpl AS SELECT day, tpl_id, hashtextextended(tpl, 0) AS hash, tpl, first_ord FROM tpls;
CREATE TABLE src_stmt_b AS SELECT DISTINCT ON (day, stmt_b) day, stmt_b AS stmt_id,
       hashtextextended(ROW(queryid, nested_queryid, cmdtype, top_text_id, q_text_id)::text, 0) AS hash,
       queryid, nested_queryid, cmdtype, top_text_id, q_text_id,
       min(ord) OVER (PARTITION BY day, stmt_b) AS first_ord FROM st;
CREATE TABLE src_stmt_d AS SELECT DISTINCT ON (day, stmt_d) day, stmt_d AS stmt_id,
       hashtextextended(ROW(queryid, nested_queryid, cmdtype, top_tpl_id, q_tpl_id, q_same)::text, 0) AS hash,
       queryid, nested_queryid, cmdtype, top_tpl_id, q_tpl_id, q_same,
       min(ord) OVER (PARTITION BY day, stmt_d) AS first_ord FROM st;

-- checks
SELECT count(*) AS rows, count(DISTINCT ord) AS samples_with_rows, (SELECT count(*) FROM smp2) AS samples,
       count(DISTINCT day) AS days,
       count(*) FILTER (WHERE fill(top_tpl, top_par) IS DISTINCT FROM top_level_query) AS top_text_mismatch,
       count(*) FILTER (WHERE NOT q_same AND fill(q_tpl, q_par) IS DISTINCT FROM query) AS query_text_mismatch,
       (SELECT count(*) FROM texts) AS distinct_texts, (SELECT count(*) FROM tpls) AS distinct_templates,
       (SELECT count(*) FROM src_sess) AS sessions, (SELECT count(*) FROM src_stmt_b) AS stmts_b,
       (SELECT count(*) FROM src_stmt_d) AS stmts_d, count(*) FILTER (WHERE has_bl) AS blocked_rows
  FROM st;
-- blocked_sample is what the current archive derives: some row of the sample has a blocker
SELECT count(*) AS blocked_sample_not_derivable FROM (
  SELECT ord, bool_or(blocked_sample) b1, bool_or(blockers > 0) b2, bool_and(blocked_sample) b3
    FROM st GROUP BY ord) x WHERE b1 <> b2 OR b1 <> b3;
