
-- The statements history in the archive as the helpers show it
-- (pgsentinel_statements_archive), and one history over the archive and
-- the ring (pgsentinel_statements_history): the archive up to the
-- statements' watermark, the ring's deltas after it, so that no reading
-- is counted twice (docs/archive.md).  The columns are those of
-- pg_stat_statements_history_deltas(), then the statement's normalized
-- text and where the row comes from, then the batch of an archived row
-- (batch_start, batch_end: its first and last reading times; a reading of
-- the ring is its own batch, at its time): a reader of a window [lo, hi)
-- names the batches to read with batch_start >= date_trunc('day', lo,
-- 'UTC') AND batch_start < hi AND batch_end >= lo, and the ring's rows
-- pass the same test; without it every batch of the archive is read.
--
-- Visibility is pg_stat_statements': every row is shown; its queryid and
-- text only to a reader with the privileges of pg_read_all_stats or who
-- is the statement's user itself (the text then reads
-- '<insufficient privilege>', as in pg_stat_statements).  The ring's part
-- comes from the helper, which leaves such rows out.
CREATE VIEW pgsentinel_statements_archive AS
SELECT d.ash_time, d.prev_ash_time, d.sample_id, d.userid, d.dbid,
       CASE WHEN v.visible THEN d.queryid END AS queryid,
       d.toplevel,
       extract(epoch FROM d.ash_time OPERATOR(pg_catalog.-) d.prev_ash_time)::pg_catalog.float8 AS seconds,
       d.reset,
       CASE WHEN NOT d.reset THEN coalesce(d.calls, 0) END AS calls,
       CASE WHEN NOT d.reset THEN coalesce(d.rows, 0) END AS rows,
       CASE WHEN NOT d.reset THEN coalesce(d.exec_ms, 0) END AS exec_ms,
       CASE WHEN NOT d.reset THEN coalesce(d.plans, 0) END AS plans,
       CASE WHEN NOT d.reset THEN coalesce(d.plan_ms, 0) END AS plan_ms,
       CASE WHEN NOT d.reset THEN coalesce(d.shared_blks_hit, 0) END AS shared_blks_hit,
       CASE WHEN NOT d.reset THEN coalesce(d.shared_blks_read, 0) END AS shared_blks_read,
       CASE WHEN NOT d.reset THEN coalesce(d.shared_blks_dirtied, 0) END AS shared_blks_dirtied,
       CASE WHEN NOT d.reset THEN coalesce(d.shared_blks_written, 0) END AS shared_blks_written,
       CASE WHEN NOT d.reset THEN coalesce(d.temp_blks_read, 0) END AS temp_blks_read,
       CASE WHEN NOT d.reset THEN coalesce(d.temp_blks_written, 0) END AS temp_blks_written,
       CASE WHEN NOT d.reset THEN coalesce(d.wal_bytes, 0)::pg_catalog.numeric END AS wal_bytes,
       CASE WHEN v.visible THEN t.text ELSE '<insufficient privilege>' END AS query,
       'archive'::pg_catalog.text AS source, d.batch_start, d.batch_end
  FROM pgsentinel_archive_statement_delta d
  LEFT JOIN pgsentinel_archive_statement_text m
    ON m.day OPERATOR(pg_catalog.=) pg_catalog.timezone('UTC', d.ash_time)::pg_catalog.date
   AND m.queryid OPERATOR(pg_catalog.=) d.queryid
   AND m.dbid OPERATOR(pg_catalog.=) d.dbid
   AND m.userid OPERATOR(pg_catalog.=) d.userid
  LEFT JOIN pgsentinel_archive_text t
    ON t.day OPERATOR(pg_catalog.=) m.day
   AND t.text_id OPERATOR(pg_catalog.=) m.text_id
 CROSS JOIN LATERAL (SELECT (SELECT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'))
                         OR d.userid OPERATOR(pg_catalog.=)
                            (SELECT r.oid FROM pg_catalog.pg_roles r
                              WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
                         AS visible) v;

-- The statements ring's history as a relation (read by the history below,
-- and by a repository's pulls through postgres_fdw, 53_fleet_pull.sql): the
-- deltas pg_stat_statements_history_deltas() computes over the whole ring
-- (its visibility: a reader's rows only, unless pg_read_all_stats), of the
-- readings in which a counter moved, as the archive keeps them, with the
-- latest text the archive has of each statement.  The ring alone, never
-- the archive: on a promoted standby the archive also holds its old
-- primary's history, which is not this server's.
CREATE VIEW pgsentinel_ring_statements AS
SELECT r.ash_time, r.prev_ash_time, r.sample_id, r.userid, r.dbid,
       r.queryid, r.toplevel, r.seconds, r.reset, r.calls, r.rows,
       r.exec_ms, r.plans, r.plan_ms, r.shared_blks_hit, r.shared_blks_read,
       r.shared_blks_dirtied, r.shared_blks_written, r.temp_blks_read,
       r.temp_blks_written, r.wal_bytes,
       (SELECT t.text
          FROM pgsentinel_archive_statement_text m
          JOIN pgsentinel_archive_text t
            ON t.day OPERATOR(pg_catalog.=) m.day
           AND t.text_id OPERATOR(pg_catalog.=) m.text_id
         WHERE m.queryid OPERATOR(pg_catalog.=) r.queryid
           AND m.dbid OPERATOR(pg_catalog.=) r.dbid
           AND m.userid OPERATOR(pg_catalog.=) r.userid
         ORDER BY m.day DESC LIMIT 1) AS query
  FROM pg_stat_statements_history_deltas('-infinity'::pg_catalog.timestamptz, 'infinity'::pg_catalog.timestamptz) r
 WHERE r.reset
    OR r.calls OPERATOR(pg_catalog.<>) 0 OR r.rows OPERATOR(pg_catalog.<>) 0
    OR r.exec_ms OPERATOR(pg_catalog.<>) 0 OR r.plans OPERATOR(pg_catalog.<>) 0
    OR r.plan_ms OPERATOR(pg_catalog.<>) 0
    OR r.shared_blks_hit OPERATOR(pg_catalog.<>) 0
    OR r.shared_blks_read OPERATOR(pg_catalog.<>) 0
    OR r.shared_blks_dirtied OPERATOR(pg_catalog.<>) 0
    OR r.shared_blks_written OPERATOR(pg_catalog.<>) 0
    OR r.temp_blks_read OPERATOR(pg_catalog.<>) 0
    OR r.temp_blks_written OPERATOR(pg_catalog.<>) 0
    OR r.wal_bytes OPERATOR(pg_catalog.<>) 0;
GRANT SELECT ON pgsentinel_ring_statements TO PUBLIC;

-- On a standby the archive is the primary's (replicated): the standby's
-- history is its own ring alone.  The ring's part: the readings the
-- archiver has not archived yet (a reading's previous one may be older
-- than the watermark: the deltas are of the whole ring).
CREATE VIEW pgsentinel_statements_history AS
SELECT ash_time, prev_ash_time, sample_id, userid, dbid, queryid, toplevel,
       seconds, reset, calls, rows, exec_ms, plans, plan_ms,
       shared_blks_hit, shared_blks_read, shared_blks_dirtied,
       shared_blks_written, temp_blks_read, temp_blks_written, wal_bytes,
       query, source, batch_start, batch_end
  FROM pgsentinel_statements_archive
 WHERE NOT pg_catalog.pg_is_in_recovery()
UNION ALL
SELECT r.ash_time, r.prev_ash_time, r.sample_id, r.userid, r.dbid,
       r.queryid, r.toplevel, r.seconds, r.reset, r.calls, r.rows,
       r.exec_ms, r.plans, r.plan_ms, r.shared_blks_hit, r.shared_blks_read,
       r.shared_blks_dirtied, r.shared_blks_written, r.temp_blks_read,
       r.temp_blks_written, r.wal_bytes, r.query, 'ring'::pg_catalog.text,
       r.ash_time, r.ash_time
  FROM pgsentinel_ring_statements r
 WHERE pg_catalog.pg_is_in_recovery()
    OR NOT EXISTS (SELECT FROM pgsentinel_archive_state st
                    WHERE CASE WHEN st.statements_history_id OPERATOR(pg_catalog.=) pgsentinel_history_id()
                               THEN r.sample_id OPERATOR(pg_catalog.<=) st.statements_last_sample_id
                               ELSE r.ash_time OPERATOR(pg_catalog.<=) st.statements_last_time END);

GRANT SELECT ON pgsentinel_statements_archive, pgsentinel_statements_history
    TO PUBLIC;
