-- F: D with the integer columns packed in SQL ("frame of reference"): per
-- batch and column, the minimum (int8) and one bytea of n values of w bytes
-- each (v - min + 1, big-endian; 0 = NULL; w the fewest bytes for the
-- batch's range), then compressed by TOAST.  xact_start per batch either
-- before the batch's first sample time (when its values repeat: sessions
-- whose transaction spans samples) or before the row's own sample time.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE OR REPLACE FUNCTION pk_w(r int8) RETURNS int IMMUTABLE LANGUAGE sql
RETURN CASE WHEN r IS NULL THEN 0 WHEN r < 255 THEN 1 WHEN r < 65535 THEN 2
            WHEN r < 16777215 THEN 3 WHEN r < 4294967295 THEN 4 WHEN r < 1099511627775 THEN 5
            WHEN r < 281474976710655 THEN 6 WHEN r < 72057594037927935 THEN 7 ELSE 8 END;
CREATE OR REPLACE FUNCTION pk_one(v int8, mn int8, w int) RETURNS bytea IMMUTABLE LANGUAGE sql
RETURN substring(int8send(coalesce(v - mn + 1, 0)) FROM 9 - w);
CREATE OR REPLACE FUNCTION unpk(pk bytea, i int, n int, mn int8) RETURNS int8 IMMUTABLE LANGUAGE sql
RETURN CASE WHEN length(pk) = 0 THEN NULL
            ELSE nullif(('x' || lpad(encode(substring(pk FROM (i - 1) * (length(pk) / n) + 1
                                                     FOR length(pk) / n), 'hex'), 16, '0'))::bit(64)::int8, 0)
                 + mn - 1 END;

CREATE OR REPLACE FUNCTION make_f(p text, bsz int, comp text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  cols text[] := ARRAY['si', 'sess', 'stmt', 'wait', 'state', 't1', 't2', 't3', 'xid', 'xmn'];
  aggs text; sel text; q text; c record;
BEGIN
  SELECT string_agg(format('min(%1$s) AS %1$s_min, pk_w(max(%1$s) - min(%1$s)) AS %1$s_w', x), ', ') INTO aggs
    FROM unnest(cols) x;
  SELECT string_agg(format('a.%1$s_min, string_agg(pk_one(r2.%1$s, a.%1$s_min, a.%1$s_w), ''''::bytea ORDER BY r2.sess, r2.ord) AS %1$s_pk', x), ', ')
    INTO sel FROM unnest(cols) x;
  q := format($f$
WITH b AS (SELECT (k.ord - 1) / %1$s AS bn, k.* FROM smp2 k),
 bb AS (SELECT bn, min(ord) AS o1, max(ord) AS o2, min(sample_time) AS base,
               array_agg(sample_id ORDER BY ord) AS sample_ids, array_agg(sample_time ORDER BY ord) AS sample_times,
               array_agg(sample_period ORDER BY ord) AS periods, array_agg(weight ORDER BY ord) AS weights,
               array_agg(blocked ORDER BY ord) AS blocked
          FROM b GROUP BY bn),
 r0 AS (SELECT bb.bn, bb.base, (s.ord - bb.o1 + 1)::int8 AS si, s.*,
               us(bb.base, s.xact_start) AS t1c, us(s.ash_time, s.xact_start) AS t1s
          FROM st s JOIN bb ON s.ord BETWEEN bb.o1 AND bb.o2),
 mode AS (SELECT bn, count(DISTINCT t1c) * 2 <= count(t1c) AS t1_chain FROM r0 GROUP BY bn),
 r2 AS (SELECT r0.bn, r0.ord, r0.si, r0.sess_id::int8 AS sess, r0.stmt_d::int8 AS stmt, r0.wait_id::int8 AS wait,
               r0.state_id::int8 AS state, CASE WHEN m.t1_chain THEN r0.t1c ELSE r0.t1s END AS t1,
               us(r0.query_start, coalesce(r0.xact_start, r0.base)) AS t2,
               us(r0.state_change, coalesce(r0.query_start, r0.base)) AS t3,
               r0.backend_xid::text::int8 AS xid, r0.backend_xmin::text::int8 AS xmn,
               r0.top_par, r0.q_par, r0.has_bl, r0.blockers, r0.blockerpid, r0.blocker_state, r0.blocker_usesysid,
               r0.blocking_pids
          FROM r0 JOIN mode m USING (bn)),
 a AS (SELECT bn, %2$s FROM r2 GROUP BY bn),
 g AS (SELECT r2.bn, count(*)::int2 AS n, bool_and(m.t1_chain) AS t1_chain, %3$s,
         array_agg(r2.top_par ORDER BY r2.sess, r2.ord) AS top_par, array_agg(r2.q_par ORDER BY r2.sess, r2.ord) AS q_par,
         CASE WHEN bool_or(r2.has_bl) THEN array_agg(r2.blockers ORDER BY r2.sess, r2.ord) END AS blockers,
         CASE WHEN bool_or(r2.has_bl) THEN array_agg(r2.blockerpid ORDER BY r2.sess, r2.ord) END AS blockerpid,
         CASE WHEN bool_or(r2.has_bl) THEN array_agg(r2.blocker_state ORDER BY r2.sess, r2.ord) END AS blocker_state,
         CASE WHEN bool_or(r2.has_bl) THEN array_agg(r2.blocker_usesysid ORDER BY r2.sess, r2.ord) END AS blocker_usesysid,
         CASE WHEN bool_or(r2.has_bl) THEN array_agg(CASE WHEN r2.blocking_pids <> '{}' THEN r2.blocking_pids::text END
                     ORDER BY r2.sess, r2.ord) END AS blocking_pids
         FROM r2 JOIN a USING (bn) JOIN mode m USING (bn)
        GROUP BY r2.bn, %4$s)
SELECT bb.o1, bb.o2, bb.base, bb.sample_ids, bb.sample_times, bb.periods, bb.weights, bb.blocked,
       g.* FROM bb LEFT JOIN g USING (bn)$f$,
    bsz, aggs, sel,
    (SELECT string_agg(format('a.%1$s_min, a.%1$s_w', x), ', ') FROM unnest(cols) x));
  PERFORM make_src('src_' || p, q);
  EXECUTE format('ALTER TABLE %I DROP COLUMN bn', 'src_' || p);
  PERFORM make_dicts(p, 'd', 'tpl');
  PERFORM make_tgt(p || '_batch', 'src_' || p);
  INSERT INTO cand_tables VALUES (p, 6, p || '_batch', 'src_' || p, 'o1');
  EXECUTE format('CREATE INDEX ON %I USING brin (base)', p || '_batch');
  FOR c IN SELECT attname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
            WHERE attrelid = (p || '_batch')::regclass AND attnum > 0 AND NOT attisdropped AND t.typlen = -1 LOOP
    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET COMPRESSION %s', p || '_batch', c.attname, comp);
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION rebuild_f(p text) RETURNS text LANGUAGE sql RETURN format($f$
SELECT u.ash_time, d.datid, d.datname, d.pid, d.leader_pid, d.usesysid, d.usename,
       d.application_name, d.client_addr, d.client_hostname, d.client_port, d.backend_start,
       t1.xact_start, t2.query_start, plus_us(coalesce(t2.query_start, b.base), u.t3) AS state_change,
       w.wait_event_type, w.wait_event, t.state,
       u.xid::text::xid, u.xmn::text::xid,
       fill(tt.tpl, u.top_par) AS top_level_query,
       CASE WHEN m.q_same THEN fill(tt.tpl, u.top_par) ELSE fill(qt.tpl, u.q_par) END AS query,
       m.cmdtype, m.queryid, m.nested_queryid, d.backend_type,
       coalesce(u.blockers, 0), u.blockerpid, u.blocker_state, b.sample_ids[u.si],
       coalesce(u.blocking_pids, '{}')::int4[], b.periods[u.si], u.blocker_usesysid,
       CASE WHEN t.state IN ('active', 'fastpath function call') THEN b.weights[u.si] ELSE 0 END,
       'archive'::text, b.blocked[u.si]
  FROM %1$I b
 CROSS JOIN LATERAL (SELECT b.si_pk || ''::bytea AS si, b.sess_pk || ''::bytea AS sess, b.stmt_pk || ''::bytea AS stmt,
                            b.wait_pk || ''::bytea AS wait, b.state_pk || ''::bytea AS state,
                            b.t1_pk || ''::bytea AS t1, b.t2_pk || ''::bytea AS t2, b.t3_pk || ''::bytea AS t3,
                            b.xid_pk || ''::bytea AS xid, b.xmn_pk || ''::bytea AS xmn OFFSET 0) k
 CROSS JOIN LATERAL (
   SELECT b.sample_times[y.si] AS ash_time, timezone('UTC', b.sample_times[y.si])::date AS sday, y.*
     FROM (SELECT unpk(k.si, x.i::int, b.n, b.si_min)::int AS si, unpk(k.sess, x.i::int, b.n, b.sess_min) AS sess,
                  unpk(k.stmt, x.i::int, b.n, b.stmt_min) AS stmt, unpk(k.wait, x.i::int, b.n, b.wait_min) AS wait,
                  unpk(k.state, x.i::int, b.n, b.state_min) AS state, unpk(k.t1, x.i::int, b.n, b.t1_min) AS t1,
                  unpk(k.t2, x.i::int, b.n, b.t2_min) AS t2, unpk(k.t3, x.i::int, b.n, b.t3_min) AS t3,
                  unpk(k.xid, x.i::int, b.n, b.xid_min) AS xid, unpk(k.xmn, x.i::int, b.n, b.xmn_min) AS xmn,
                  x.top_par, x.q_par, x.blockers, x.blockerpid, x.blocker_state, x.blocker_usesysid, x.blocking_pids
             FROM ROWS FROM (generate_series(1, b.n), unnest(b.top_par), unnest(b.q_par),
                             unnest(b.blockers), unnest(b.blockerpid), unnest(b.blocker_state),
                             unnest(b.blocker_usesysid), unnest(b.blocking_pids))
                  AS x(i, top_par, q_par, blockers, blockerpid, blocker_state, blocker_usesysid, blocking_pids)
            OFFSET 0) y) u
 CROSS JOIN LATERAL (SELECT CASE WHEN b.t1_chain THEN plus_us(b.base, -u.t1) ELSE plus_us(u.ash_time, -u.t1) END AS xact_start) t1
 CROSS JOIN LATERAL (SELECT plus_us(coalesce(t1.xact_start, b.base), u.t2) AS query_start) t2
  JOIN %2$I d ON d.day = u.sday AND d.sess_id = u.sess
  JOIN %3$I m ON m.day = u.sday AND m.stmt_id = u.stmt
  LEFT JOIN %4$I w ON w.wait_id = u.wait
  LEFT JOIN %5$I t ON t.state_id = u.state
  LEFT JOIN %6$I tt ON tt.day = u.sday AND tt.tpl_id = m.top_tpl_id
  LEFT JOIN %6$I qt ON qt.day = u.sday AND qt.tpl_id = m.q_tpl_id $f$,
  p || '_batch', p || '_sess', p || '_stmt', p || '_wait', p || '_state', p || '_tpl');
