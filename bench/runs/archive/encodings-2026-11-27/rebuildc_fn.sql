-- rebuild_c() alone (also in cands.sql)
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
