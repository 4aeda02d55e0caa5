-- Candidate encodings: their sources (src_*, values stored uncompressed so
-- that the targets compress them themselves), their empty target tables, the
-- replay that fills the targets step by step as the archiver would, and the
-- queries that rebuild the archive's rows from the targets.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- which target tables make a candidate, filled from which source, in order
DROP TABLE IF EXISTS cand_tables, wm CASCADE;
CREATE TABLE cand_tables (cand text, seq int, tgt text, src text, ordcol text);
-- the archiver's watermark, updated by every step of every candidate
CREATE TABLE wm (singleton boolean PRIMARY KEY DEFAULT true, last_ord int, steps bigint DEFAULT 0);
INSERT INTO wm DEFAULT VALUES;

-- an empty target like a source, without the source's bookkeeping columns
CREATE OR REPLACE FUNCTION make_tgt(tgt text, src text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', tgt);
  EXECUTE format('CREATE TABLE %I AS SELECT %s FROM %I WITH NO DATA', tgt,
    (SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
      WHERE attrelid = src::regclass AND attnum > 0 AND NOT attisdropped
        AND attname NOT IN ('first_ord', 'o1', 'o2')), src);
  EXECUTE format('ALTER TABLE %I SET (autovacuum_enabled = off)', tgt);
END $$;

-- sources: varlena columns stored EXTERNAL (uncompressed), so that an
-- INSERT ... SELECT into a target compresses with the target's method
CREATE OR REPLACE FUNCTION make_src(src text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', src);
  EXECUTE format('CREATE TABLE %I AS %s WITH NO DATA', src, q);
  FOR c IN SELECT attname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
            WHERE attrelid = src::regclass AND attnum > 0 AND NOT attisdropped AND t.typlen = -1 LOOP
    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STORAGE EXTERNAL', src, c.attname);
  END LOOP;
  EXECUTE format('INSERT INTO %I %s', src, q);
  EXECUTE format('ANALYZE %I', src);
END $$;

-- ===== shared dictionaries (each candidate gets its own copies) =====
CREATE OR REPLACE FUNCTION make_dicts(p text, stmt text, txt text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM make_tgt(p || '_wait', 'src_wait');
  EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (wait_id)', p || '_wait');
  PERFORM make_tgt(p || '_state', 'src_state');
  EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (state_id)', p || '_state');
  PERFORM make_tgt(p || '_sess', 'src_sess');
  EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (day, sess_id)', p || '_sess');
  EXECUTE format('CREATE INDEX ON %I (day, hash)', p || '_sess');
  PERFORM make_tgt(p || '_stmt', 'src_stmt_' || stmt);
  EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (day, stmt_id)', p || '_stmt');
  EXECUTE format('CREATE INDEX ON %I (day, hash)', p || '_stmt');
  PERFORM make_tgt(p || '_' || txt, 'src_' || txt);
  EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (day, %I)', p || '_' || txt, txt || '_id');
  EXECUTE format('CREATE INDEX ON %I (day, hash)', p || '_' || txt);
  DELETE FROM cand_tables WHERE cand = p;
  INSERT INTO cand_tables VALUES
    (p, 1, p || '_wait', 'src_wait', 'first_ord'), (p, 2, p || '_state', 'src_state', 'first_ord'),
    (p, 3, p || '_sess', 'src_sess', 'first_ord'), (p, 4, p || '_' || txt, 'src_' || txt, 'first_ord'),
    (p, 5, p || '_stmt', 'src_stmt_' || stmt, 'first_ord');
END $$;

-- ===== A: the current format, rebuilt from the rows =====
DROP TABLE IF EXISTS src_a_act, src_a_sample CASCADE;
CREATE TABLE src_a_act AS
SELECT DISTINCT ON (day, act_id) day, act_id AS activity_id,
       hashtextextended(ROW(datid, datname, pid, leader_pid, usesysid, usename, application_name,
           client_addr, client_hostname, client_port, backend_start, xact_start, query_start,
           state_change, state, backend_xid, backend_xmin, top_text_id, q_text_id, cmdtype,
           queryid, nested_queryid, backend_type)::text, 0) AS hash,
       datid, datname, pid, leader_pid, usesysid, usename, application_name, client_addr,
       client_hostname, client_port, backend_start, xact_start, query_start, state_change, state,
       backend_xid, backend_xmin, top_text_id AS top_level_query_id, q_text_id AS query_id, cmdtype,
       queryid, nested_queryid, backend_type, min(ord) OVER (PARTITION BY day, act_id) AS first_ord
  FROM (SELECT st.*, (dense_rank() OVER (PARTITION BY day ORDER BY datid, datname, pid, leader_pid,
           usesysid, usename, application_name, client_addr, client_hostname, client_port,
           backend_start, xact_start, query_start, state_change, state, backend_xid::text,
           backend_xmin::text, top_text_id, q_text_id, cmdtype, queryid, nested_queryid,
           backend_type))::int AS act_id FROM st) x;
ALTER TABLE src_a_act ALTER COLUMN activity_id TYPE int;
DROP TABLE IF EXISTS st_a;
CREATE TABLE st_a AS SELECT s.*, a.activity_id FROM st s JOIN src_a_act a ON a.day = s.day
   AND a.hash = hashtextextended(ROW(s.datid, s.datname, s.pid, s.leader_pid, s.usesysid, s.usename,
           s.application_name, s.client_addr, s.client_hostname, s.client_port, s.backend_start,
           s.xact_start, s.query_start, s.state_change, s.state, s.backend_xid, s.backend_xmin,
           s.top_text_id, s.q_text_id, s.cmdtype, s.queryid, s.nested_queryid, s.backend_type)::text, 0);
SELECT (SELECT count(*) FROM st_a) = (SELECT count(*) FROM st) AS a_mapping_ok;
SELECT make_src('src_a_sample', $q$
SELECT k.ord AS first_ord, k.sample_time, k.sample_id, k.sample_period, k.weight,
       coalesce(g.n, 0) AS active_sessions, g.activity_ids, g.wait_event_ids, g.blockers,
       g.blockerpids, g.blocker_states, g.blocker_usesysids, g.blocking_pids
  FROM smp2 k LEFT JOIN (
  SELECT m.ord, (count(*) FILTER (WHERE m.weight > 0))::int4 AS n,
         array_agg(m.activity_id ORDER BY m.pid) AS activity_ids,
         array_agg(m.wait_id::int4 ORDER BY m.pid) AS wait_event_ids,
         CASE WHEN bool_or(m.blockers > 0) THEN array_agg(m.blockers ORDER BY m.pid) END AS blockers,
         CASE WHEN bool_or(m.blockers > 0) THEN array_agg(m.blockerpid ORDER BY m.pid) END AS blockerpids,
         CASE WHEN bool_or(m.blockers > 0) THEN array_agg(m.blocker_state ORDER BY m.pid) END AS blocker_states,
         CASE WHEN bool_or(m.blockers > 0) THEN array_agg(m.blocker_usesysid ORDER BY m.pid) END AS blocker_usesysids,
         CASE WHEN bool_or(m.blockers > 0) THEN array_agg(CASE WHEN m.blockers > 0 THEN m.blocking_pids::text END
                     ORDER BY m.pid) END AS blocking_pids
    FROM st_a m GROUP BY m.ord) g ON g.ord = k.ord $q$);

CREATE OR REPLACE FUNCTION make_a() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM make_tgt('a_wait', 'src_wait');
  ALTER TABLE a_wait ADD PRIMARY KEY (wait_id);
  ALTER TABLE a_wait ADD UNIQUE NULLS NOT DISTINCT (wait_event_type, wait_event);
  PERFORM make_tgt('a_text', 'src_text');
  ALTER TABLE a_text ADD PRIMARY KEY (day, text_id);
  CREATE INDEX ON a_text (day, hash);
  PERFORM make_tgt('a_activity', 'src_a_act');
  ALTER TABLE a_activity ADD PRIMARY KEY (day, activity_id);
  CREATE INDEX ON a_activity (day, hash);
  PERFORM make_tgt('a_sample', 'src_a_sample');
  CREATE INDEX ON a_sample USING brin (sample_time);
  DELETE FROM cand_tables WHERE cand = 'A';
  INSERT INTO cand_tables VALUES ('A', 1, 'a_wait', 'src_wait', 'first_ord'),
    ('A', 2, 'a_text', 'src_text', 'first_ord'), ('A', 3, 'a_activity', 'src_a_act', 'first_ord'),
    ('A', 4, 'a_sample', 'src_a_sample', 'first_ord');
END $$;

CREATE OR REPLACE FUNCTION rebuild_a() RETURNS text LANGUAGE sql RETURN $q$
SELECT s.sample_time AS ash_time, a.datid, a.datname, a.pid, a.leader_pid, a.usesysid, a.usename,
       a.application_name, a.client_addr, a.client_hostname, a.client_port, a.backend_start,
       a.xact_start, a.query_start, a.state_change, w.wait_event_type, w.wait_event, a.state,
       a.backend_xid, a.backend_xmin, tt.text AS top_level_query, qt.text AS query, a.cmdtype,
       a.queryid, a.nested_queryid, a.backend_type, coalesce(u.blockers, 0) AS blockers,
       u.blockerpid, u.blocker_state, s.sample_id, coalesce(u.blocking_pids, '{}')::int4[],
       s.sample_period, u.blocker_usesysid,
       CASE WHEN a.state IN ('active', 'fastpath function call') THEN s.weight ELSE 0 END,
       'archive'::text, s.blockers IS NOT NULL
  FROM a_sample s
 CROSS JOIN LATERAL (SELECT timezone('UTC', s.sample_time)::date AS sday, x.*
         FROM ROWS FROM (unnest(s.activity_ids), unnest(s.wait_event_ids), unnest(s.blockers),
                         unnest(s.blockerpids), unnest(s.blocker_states),
                         unnest(s.blocker_usesysids), unnest(s.blocking_pids))
              AS x(activity_id, wait_event_id, blockers, blockerpid, blocker_state,
                   blocker_usesysid, blocking_pids) OFFSET 0) u
  JOIN a_activity a ON a.day = u.sday AND a.activity_id = u.activity_id
  LEFT JOIN a_wait w ON w.wait_id = u.wait_event_id
  LEFT JOIN a_text tt ON tt.day = a.day AND tt.text_id = a.top_level_query_id
  LEFT JOIN a_text qt ON qt.day = a.day AND qt.text_id = a.query_id $q$;

-- ===== B: session/statement/text dictionaries, one row per sample with per-column arrays =====
SELECT make_src('src_b_sample', $q$
SELECT k.ord AS first_ord, k.sample_time, k.sample_id, k.sample_period, k.weight, k.blocked,
       g.sess, g.stmt, g.wait, g.state, g.xact_us, g.query_us, g.change_us, g.xid, g.bxmin,
       g.blockers, g.blockerpid, g.blocker_state, g.blocker_usesysid, g.blocking_pids
  FROM smp2 k LEFT JOIN (
  SELECT m.ord, array_agg(m.sess_id ORDER BY m.pid) AS sess, array_agg(m.stmt_b ORDER BY m.pid) AS stmt,
         array_agg(m.wait_id ORDER BY m.pid) AS wait, array_agg(m.state_id ORDER BY m.pid) AS state,
         array_agg(us(m.ash_time, m.xact_start) ORDER BY m.pid) AS xact_us,
         array_agg(us(m.ash_time, m.query_start) ORDER BY m.pid) AS query_us,
         array_agg(us(m.ash_time, m.state_change) ORDER BY m.pid) AS change_us,
         array_agg(m.backend_xid ORDER BY m.pid) AS xid, array_agg(m.backend_xmin ORDER BY m.pid) AS bxmin,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(m.blockers ORDER BY m.pid) END AS blockers,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(m.blockerpid ORDER BY m.pid) END AS blockerpid,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(m.blocker_state ORDER BY m.pid) END AS blocker_state,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(m.blocker_usesysid ORDER BY m.pid) END AS blocker_usesysid,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(CASE WHEN m.blocking_pids <> '{}' THEN m.blocking_pids::text END
                     ORDER BY m.pid) END AS blocking_pids
    FROM st m GROUP BY m.ord) g ON g.ord = k.ord $q$);

CREATE OR REPLACE FUNCTION make_b() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM make_dicts('b', 'b', 'text');
  PERFORM make_tgt('b_sample', 'src_b_sample');
  CREATE INDEX ON b_sample USING brin (sample_time);
  INSERT INTO cand_tables VALUES ('b', 6, 'b_sample', 'src_b_sample', 'first_ord');
END $$;

CREATE OR REPLACE FUNCTION rebuild_b() RETURNS text LANGUAGE sql RETURN $q$
SELECT s.sample_time AS ash_time, d.datid, d.datname, d.pid, d.leader_pid, d.usesysid, d.usename,
       d.application_name, d.client_addr, d.client_hostname, d.client_port, d.backend_start,
       plus_us(s.sample_time, -u.xact_us), plus_us(s.sample_time, -u.query_us),
       plus_us(s.sample_time, -u.change_us), w.wait_event_type, w.wait_event, t.state,
       u.xid, u.xmin, tt.text, qt.text, m.cmdtype, m.queryid, m.nested_queryid, d.backend_type,
       coalesce(u.blockers, 0), u.blockerpid, u.blocker_state, s.sample_id,
       coalesce(u.blocking_pids, '{}')::int4[], s.sample_period, u.blocker_usesysid,
       CASE WHEN t.state IN ('active', 'fastpath function call') THEN s.weight ELSE 0 END,
       'archive'::text, s.blocked
  FROM b_sample s
 CROSS JOIN LATERAL (SELECT timezone('UTC', s.sample_time)::date AS sday, x.*
         FROM ROWS FROM (unnest(s.sess), unnest(s.stmt), unnest(s.wait), unnest(s.state),
                         unnest(s.xact_us), unnest(s.query_us), unnest(s.change_us),
                         unnest(s.xid), unnest(s.bxmin), unnest(s.blockers), unnest(s.blockerpid),
                         unnest(s.blocker_state), unnest(s.blocker_usesysid), unnest(s.blocking_pids))
              AS x(sess, stmt, wait, state, xact_us, query_us, change_us, xid, xmin, blockers,
                   blockerpid, blocker_state, blocker_usesysid, blocking_pids) OFFSET 0) u
  JOIN b_sess d ON d.day = u.sday AND d.sess_id = u.sess
  JOIN b_stmt m ON m.day = u.sday AND m.stmt_id = u.stmt
  LEFT JOIN b_wait w ON w.wait_id = u.wait
  LEFT JOIN b_state t ON t.state_id = u.state
  LEFT JOIN b_text tt ON tt.day = u.sday AND tt.text_id = m.top_text_id
  LEFT JOIN b_text qt ON qt.day = u.sday AND qt.text_id = m.q_text_id $q$;

-- ===== C/D/E: batches of bsz samples, one row each =====
-- p: name; bsz: samples per batch; sess_sort: rows ordered by session then
-- sample (else by sample then pid); chain: times as chained deltas from the
-- batch's first sample time (else each before its sample's time); tpl:
-- texts as templates + parameters (D) (else whole texts in a dictionary);
-- blob: the whole batch as one text (E) (else one column per array).
CREATE OR REPLACE FUNCTION make_c(p text, bsz int, sess_sort boolean, chain boolean, tpl boolean,
                                  blob boolean DEFAULT false, comp text DEFAULT 'lz4',
                                  ttt int DEFAULT NULL) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  ob text := CASE WHEN sess_sort THEN 'm.sess_id, m.ord' ELSE 'm.ord, m.pid' END;
  q text;
  c record;
BEGIN
  q := format($f$
WITH b AS (SELECT (k.ord - 1) / %1$s AS bn, k.*, (SELECT count(*) FROM st WHERE st.ord = k.ord)::int2 AS n FROM smp2 k),
 bb AS (SELECT bn, min(ord) AS o1, max(ord) AS o2, min(sample_time) AS base,
               array_agg(sample_id ORDER BY ord) AS sample_ids, array_agg(sample_time ORDER BY ord) AS sample_times,
               array_agg(sample_period ORDER BY ord) AS periods, array_agg(weight ORDER BY ord) AS weights,
               array_agg(blocked ORDER BY ord) AS blocked, array_agg(n ORDER BY ord) AS nrows
          FROM b GROUP BY bn),
 r AS (SELECT bb.bn, bb.base, (s.ord - bb.o1 + 1)::int2 AS si, s.*
         FROM st s JOIN bb ON s.ord BETWEEN bb.o1 AND bb.o2),
 xb AS (SELECT bn, least(min(backend_xid::text::int8), min(backend_xmin::text::int8)) AS xbase FROM r GROUP BY bn),
 g AS (SELECT m.bn, %2$s
         array_agg(m.sess_id ORDER BY %3$s) AS sess, array_agg(%4$s ORDER BY %3$s) AS stmt,
         array_agg(m.wait_id ORDER BY %3$s) AS wait, array_agg(m.state_id ORDER BY %3$s) AS state,
         array_agg(%5$s ORDER BY %3$s) AS t1, array_agg(%6$s ORDER BY %3$s) AS t2,
         array_agg(%7$s ORDER BY %3$s) AS t3,
         min(x.xbase) AS xbase,
         array_agg(m.backend_xid::text::int8 - x.xbase ORDER BY %3$s) AS xid,
         array_agg(m.backend_xmin::text::int8 - x.xbase ORDER BY %3$s) AS bxmin,
         %8$s
         CASE WHEN bool_or(m.has_bl) THEN array_agg(m.blockers ORDER BY %3$s) END AS blockers,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(m.blockerpid ORDER BY %3$s) END AS blockerpid,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(m.blocker_state ORDER BY %3$s) END AS blocker_state,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(m.blocker_usesysid ORDER BY %3$s) END AS blocker_usesysid,
         CASE WHEN bool_or(m.has_bl) THEN array_agg(CASE WHEN m.blocking_pids <> '{}' THEN m.blocking_pids::text END
                     ORDER BY %3$s) END AS blocking_pids
         FROM r m JOIN xb x USING (bn) GROUP BY m.bn)
SELECT bb.o1, bb.o2, bb.base, bb.sample_ids, bb.sample_times, bb.periods, bb.weights, bb.blocked,
       %9$s g.sess, g.stmt, g.wait, g.state, g.t1, g.t2, g.t3, g.xbase, g.xid, g.bxmin, %10$s
       g.blockers, g.blockerpid, g.blocker_state, g.blocker_usesysid, g.blocking_pids
  FROM bb LEFT JOIN g USING (bn)$f$,
    bsz,
    CASE WHEN sess_sort THEN 'array_agg(m.si ORDER BY m.sess_id, m.ord) AS si,' ELSE '' END,
    ob,
    CASE WHEN tpl THEN 'm.stmt_d' ELSE 'm.stmt_b' END,
    CASE WHEN chain THEN 'us(m.base, m.xact_start)' ELSE 'us(m.ash_time, m.xact_start)' END,
    CASE WHEN chain THEN 'us(m.query_start, coalesce(m.xact_start, m.base))' ELSE 'us(m.ash_time, m.query_start)' END,
    CASE WHEN chain THEN 'us(m.state_change, coalesce(m.query_start, m.base))' ELSE 'us(m.ash_time, m.state_change)' END,
    CASE WHEN tpl THEN format('array_agg(m.top_par ORDER BY %1$s) AS top_par, array_agg(m.q_par ORDER BY %1$s) AS q_par,', ob) ELSE '' END,
    CASE WHEN sess_sort THEN 'g.si,' ELSE 'bb.nrows,' END,
    CASE WHEN tpl THEN 'g.top_par, g.q_par,' ELSE '' END);
  PERFORM make_src('src_' || p, q);
  PERFORM make_dicts(p, CASE WHEN tpl THEN 'd' ELSE 'b' END, CASE WHEN tpl THEN 'tpl' ELSE 'text' END);
  IF blob THEN
    -- the whole batch as one text: the source row's text form, read back by a cast
    PERFORM make_src('srcblob_' || p, format('SELECT o1, base, s::text AS blob FROM %I s', 'src_' || p));
    PERFORM make_tgt(p || '_batch', 'srcblob_' || p);
    INSERT INTO cand_tables VALUES (p, 6, p || '_batch', 'srcblob_' || p, 'o1');
  ELSE
    PERFORM make_tgt(p || '_batch', 'src_' || p);
    INSERT INTO cand_tables VALUES (p, 6, p || '_batch', 'src_' || p, 'o1');
  END IF;
  EXECUTE format('CREATE INDEX ON %I USING brin (base)', p || '_batch');
  IF ttt IS NOT NULL THEN
    EXECUTE format('ALTER TABLE %I SET (toast_tuple_target = %s)', p || '_batch', ttt);
  END IF;
  FOR c IN SELECT attname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
            WHERE attrelid = (p || '_batch')::regclass AND attnum > 0 AND NOT attisdropped AND t.typlen = -1 LOOP
    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET COMPRESSION %s', p || '_batch', c.attname, comp);
  END LOOP;
  -- remember how to read it back
  DELETE FROM cand_opts WHERE cand = p;
  INSERT INTO cand_opts VALUES (p, bsz, sess_sort, chain, tpl, blob, comp, ttt);
END $$;

DROP TABLE IF EXISTS cand_opts;
CREATE TABLE cand_opts (cand text PRIMARY KEY, bsz int, sess_sort boolean, chain boolean, tpl boolean,
                        blob boolean, comp text, ttt int);

CREATE OR REPLACE FUNCTION rebuild_c(p text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE o cand_opts;
BEGIN
  SELECT * INTO o FROM cand_opts WHERE cand = p;
  RETURN format($f$
SELECT u.ash_time, d.datid, d.datname, d.pid, d.leader_pid, d.usesysid, d.usename,
       d.application_name, d.client_addr, d.client_hostname, d.client_port, d.backend_start,
       t1.xact_start, t2.query_start, %1$s AS state_change, w.wait_event_type, w.wait_event, t.state,
       (b.xbase + u.xid)::text::xid, (b.xbase + u.xmin)::text::xid,
       %2$s AS top_level_query, %3$s AS query, m.cmdtype, m.queryid, m.nested_queryid, d.backend_type,
       coalesce(u.blockers, 0), u.blockerpid, u.blocker_state, b.sample_ids[u.si],
       coalesce(u.blocking_pids, '{}')::int4[], b.periods[u.si], u.blocker_usesysid,
       CASE WHEN t.state IN ('active', 'fastpath function call') THEN b.weights[u.si] ELSE 0 END,
       'archive'::text, b.blocked[u.si]
  FROM %4$s b
 CROSS JOIN LATERAL (SELECT b.sample_times[x.si] AS ash_time, timezone('UTC', b.sample_times[x.si])::date AS sday, x.*
         FROM ROWS FROM (unnest(%5$s), unnest(b.sess), unnest(b.stmt), unnest(b.wait), unnest(b.state),
                         unnest(b.t1), unnest(b.t2), unnest(b.t3), unnest(b.xid), unnest(b.bxmin),
                         unnest(%6$s), unnest(%7$s),
                         unnest(b.blockers), unnest(b.blockerpid), unnest(b.blocker_state),
                         unnest(b.blocker_usesysid), unnest(b.blocking_pids))
              AS x(si, sess, stmt, wait, state, t1, t2, t3, xid, xmin, top_par, q_par, blockers,
                   blockerpid, blocker_state, blocker_usesysid, blocking_pids) OFFSET 0) u
 CROSS JOIN LATERAL (SELECT %8$s AS xact_start) t1
 CROSS JOIN LATERAL (SELECT %9$s AS query_start) t2
  JOIN %10$I d ON d.day = u.sday AND d.sess_id = u.sess
  JOIN %11$I m ON m.day = u.sday AND m.stmt_id = u.stmt
  LEFT JOIN %12$I w ON w.wait_id = u.wait
  LEFT JOIN %13$I t ON t.state_id = u.state
  LEFT JOIN %14$I tt ON tt.day = u.sday AND tt.%15$s_id = m.%16$s
  LEFT JOIN %14$I qt ON qt.day = u.sday AND qt.%15$s_id = m.%17$s $f$,
    CASE WHEN o.chain THEN 'plus_us(coalesce(t2.query_start, b.base), u.t3)' ELSE 'plus_us(u.ash_time, -u.t3)' END,
    CASE WHEN o.tpl THEN 'fill(tt.tpl, u.top_par)' ELSE 'tt.text' END,
    CASE WHEN o.tpl THEN 'CASE WHEN m.q_same THEN fill(tt.tpl, u.top_par) ELSE fill(qt.tpl, u.q_par) END' ELSE 'qt.text' END,
    CASE WHEN o.blob THEN format('(SELECT (q.r).* FROM %I z CROSS JOIN LATERAL (SELECT z.blob::%I AS r OFFSET 0) q)', p || '_batch', 'src_' || p)
         ELSE quote_ident(p || '_batch') END,
    CASE WHEN o.sess_sort THEN 'b.si' ELSE
      '(SELECT array_agg(i ORDER BY i, j) FROM generate_subscripts(b.nrows, 1) i, generate_series(1, b.nrows[i]) j)' END,
    CASE WHEN o.tpl THEN 'b.top_par' ELSE 'NULL::text[]' END,
    CASE WHEN o.tpl THEN 'b.q_par' ELSE 'NULL::text[]' END,
    CASE WHEN o.chain THEN 'plus_us(b.base, -u.t1)' ELSE 'plus_us(u.ash_time, -u.t1)' END,
    CASE WHEN o.chain THEN 'plus_us(coalesce(t1.xact_start, b.base), u.t2)' ELSE 'plus_us(u.ash_time, -u.t2)' END,
    p || '_sess', p || '_stmt', p || '_wait', p || '_state',
    p || CASE WHEN o.tpl THEN '_tpl' ELSE '_text' END,
    CASE WHEN o.tpl THEN 'tpl' ELSE 'text' END,
    CASE WHEN o.tpl THEN 'top_tpl_id' ELSE 'top_text_id' END,
    CASE WHEN o.tpl THEN 'q_tpl_id' ELSE 'q_text_id' END);
END $$;

-- ===== replay: one INSERT per table per step, each step its own transaction =====
CREATE OR REPLACE PROCEDURE replay(p text, o_from int, o_to int, step int) LANGUAGE plpgsql AS $$
DECLARE k int; r record; cols text;
BEGIN
  FOR k IN SELECT generate_series(o_from, o_to, step) LOOP
    FOR r IN SELECT * FROM cand_tables WHERE cand = p ORDER BY seq LOOP
      SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols FROM pg_attribute
       WHERE attrelid = r.tgt::regclass AND attnum > 0 AND NOT attisdropped;
      EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I WHERE %I BETWEEN $1 AND $2 ORDER BY %I',
                     r.tgt, cols, cols, r.src, r.ordcol, r.ordcol) USING k, least(k + step - 1, o_to);
    END LOOP;
    UPDATE wm SET last_ord = least(k + step - 1, o_to), steps = steps + 1;
    COMMIT;
  END LOOP;
END $$;

-- sizes of a candidate's relations: total (pg_total_relation_size) and used
-- (pgstattuple: table_len - free_space, for heap, TOAST, TOAST index, btree
-- indexes; BRIN counted in total only: fixed pages)
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

DROP TABLE IF EXISTS results;
CREATE TABLE results (cand text, ckpt boolean, samples int, rows int, wal bigint, wal_fpi bigint,
                      wal_records bigint, total bigint, used bigint, diff1 bigint, diff2 bigint,
                      rebuild_ms float8, rebuilt_samples int, note text, at timestamptz DEFAULT now());
DROP TABLE IF EXISTS res_wal;
CREATE TABLE res_wal (cand text, ckpt boolean, rmgr text, count bigint, rec bigint, fpi bigint, total bigint);
