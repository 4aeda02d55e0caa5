-- What a C packer could reach (an estimate, not an encoding): per batch of 60
-- samples, rows by session then sample; a value equal to the same session's
-- previous row costs 1 bit, otherwise 2 bits + the bits of a frame-of-
-- reference code over the batch (ceil(log2(max - min + 2))); literals: 1 bit
-- when the same as the session's previous row, else numbers as zigzag varints
-- of ceil(log2(2|v| + 1)) + 4 bits, quoted strings 8 bits a character + 4.
-- No entropy coding.  Bytes per session-row.
\set bsz 60
WITH r AS (
  SELECT (ord - 1) / :bsz AS bn, sess_id, ord,
         sess_id::int8 AS sess, stmt_d::int8 AS stmt, wait_id::int8 AS wait, state_id::int8 AS state,
         us(ash_time, xact_start) AS t1s,
         us(query_start, coalesce(xact_start, ash_time)) AS t2, us(state_change, coalesce(query_start, ash_time)) AS t3,
         xact_start, backend_xid::text::int8 AS xid, backend_xmin::text::int8 AS xmn, top_par, q_par
    FROM st),
r2 AS (
  SELECT r.*, sess IS NOT DISTINCT FROM lag(sess) OVER w AS s1, stmt IS NOT DISTINCT FROM lag(stmt) OVER w AS s2,
         wait IS NOT DISTINCT FROM lag(wait) OVER w AS s3, state IS NOT DISTINCT FROM lag(state) OVER w AS s4,
         xact_start IS NOT DISTINCT FROM lag(xact_start) OVER w AS s5, t2 IS NOT DISTINCT FROM lag(t2) OVER w AS s6,
         t3 IS NOT DISTINCT FROM lag(t3) OVER w AS s7, xid IS NOT DISTINCT FROM lag(xid) OVER w AS s8,
         xmn IS NOT DISTINCT FROM lag(xmn) OVER w AS s9,
         (top_par, q_par) IS NOT DISTINCT FROM (lag(top_par) OVER w, lag(q_par) OVER w) AS s10
    FROM r WINDOW w AS (PARTITION BY bn, sess_id ORDER BY ord)),
cols AS (
  SELECT bn, k, v, same
    FROM r2, LATERAL (VALUES
      ('ids: session', sess, s1), ('ids: statement', stmt, s2), ('ids: wait', wait, s3), ('ids: state', state, s4),
      ('xact_start (before sample; same xact = 1 bit)', t1s, s5),
      ('query_start (after xact_start)', t2, s6), ('state_change (after query_start)', t3, s7),
      ('backend_xid', xid, s8), ('backend_xmin', xmn, s9)) x(k, v, same)),
bits AS (
  SELECT k, sum(CASE WHEN same THEN 1 WHEN v IS NULL THEN 2
                     ELSE 2 + ceil(log(2, (mx - mn + 2)::numeric)) END) AS bits
    FROM (SELECT c.*, min(v) OVER (PARTITION BY bn, k) AS mn, max(v) OVER (PARTITION BY bn, k) AS mx FROM cols c) y
   GROUP BY k),
lits AS (
  SELECT sum(CASE WHEN r2.s10 THEN 1 ELSE 1 + coalesce((
           SELECT sum(CASE WHEN left(p, 1) = chr(39) THEN 8 * length(p) + 4
                           WHEN p ~ '^-?[0-9]+$' THEN 4 + ceil(log(2, (2 * abs(p::numeric) + 1)))::int
                           ELSE 8 * length(p) END)
             FROM unnest(string_to_array(r2.top_par, E'\x02') || string_to_array(r2.q_par, E'\x02')) p), 0) END) AS bits
    FROM r2)
SELECT k AS part, round(bits / 8.0 / (SELECT count(*) FROM st), 2) AS est_bytes_per_row FROM bits
UNION ALL SELECT 'literals', round((SELECT bits FROM lits) / 8.0 / (SELECT count(*) FROM st), 2)
UNION ALL SELECT '= total (without blockers and per-sample fields)',
          round(((SELECT sum(bits) FROM bits) + (SELECT bits FROM lits)) / 8.0 / (SELECT count(*) FROM st), 2)
ORDER BY 1;
