--
-- The statements history in the archive: per reading, the deltas that
-- pg_stat_statements_history_deltas() computes over the ring (reset-aware),
-- and the statement's normalized text, which outlives pg_stat_statements'
-- entry; the combined view counts no reading twice and shows, before the
-- watermark, the archive and after it the ring; other roles' statements
-- are shown as pg_stat_statements shows them.
--
-- The archiver runs every 100 ms (test/pgsentinel.conf).  The statements
-- ring holds seconds here: a read the worker laps says so in a NOTICE,
-- which is not what this test is about.
SET client_min_messages = warning;
-- Statements of earlier tests run by many users would make each reading
-- of a sleeper many rows (a reading returns a row per user), turning the
-- statements ring over before the checks below save their rows.
SELECT pg_stat_statements_reset() IS NOT NULL AS pgss_reset;
SELECT pgs_wait_for($$(SELECT archive_state FROM pgsentinel_status()) = 'ok'$$);
SELECT pgs_wait_for($$(SELECT pgssh_state FROM pgsentinel_status()) = 'ok'$$);

-- One call of this statement stays active until a sample saw it executed
-- (a row sampled while it was parsed has no query id: the statements
-- history would not read its counters).
CREATE FUNCTION pgs_stmt_work(n int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    body_start timestamptz := clock_timestamp();
    deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
    LOOP
        PERFORM pg_sleep(0.01);
        EXIT WHEN EXISTS (SELECT FROM pg_active_session_history
                          WHERE pid = pg_backend_pid()
                            AND query_start = statement_timestamp()
                            AND ash_time >= body_start);
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'this session was not sampled within 60 s';
        END IF;
    END LOOP;
    RETURN n;
END $$;

-- The newest reading of the current role's top-level statement qid has
-- the calls pg_stat_statements has now (its final reading is in).
CREATE FUNCTION pgs_stmt_caught_up(qid bigint) RETURNS boolean
LANGUAGE sql AS $$
  SELECT coalesce((SELECT h.calls FROM pg_stat_statements_history h
                   WHERE h.queryid = qid AND h.toplevel AND h.userid = s.userid
                   ORDER BY h.sample_id DESC LIMIT 1) = s.calls, false)
  FROM pg_stat_statements s
  WHERE s.queryid = qid AND s.toplevel AND s.userid = current_user::regrole
$$;

-- The statements' watermark has passed reading s.
CREATE FUNCTION pgs_stmt_archived(s bigint) RETURNS boolean
LANGUAGE sql AS $$
  SELECT coalesce((SELECT statements_last_sample_id FROM pgsentinel_archive_state) >= s, false)
$$;

-- The helper's rows in which a counter moved (the archive stores those).
CREATE TEMP VIEW helper_rows AS
  SELECT ash_time, prev_ash_time, sample_id, userid, dbid, queryid,
         toplevel, seconds, reset, calls, rows, exec_ms, plans, plan_ms,
         shared_blks_hit, shared_blks_read, shared_blks_dirtied,
         shared_blks_written, temp_blks_read, temp_blks_written, wal_bytes
  FROM pg_stat_statements_history_deltas('-infinity', 'infinity')
  WHERE reset OR calls <> 0 OR rows <> 0 OR exec_ms <> 0 OR plans <> 0
     OR plan_ms <> 0 OR shared_blks_hit <> 0 OR shared_blks_read <> 0
     OR shared_blks_dirtied <> 0 OR shared_blks_written <> 0
     OR temp_blks_read <> 0 OR temp_blks_written <> 0 OR wal_bytes <> 0;
CREATE TEMP VIEW archive_rows AS
  SELECT ash_time, prev_ash_time, sample_id, userid, dbid, queryid,
         toplevel, seconds, reset, calls, rows, exec_ms, plans, plan_ms,
         shared_blks_hit, shared_blks_read, shared_blks_dirtied,
         shared_blks_written, temp_blks_read, temp_blks_written, wal_bytes
  FROM pgsentinel_statements_archive;
CREATE TEMP VIEW history_rows AS
  SELECT ash_time, prev_ash_time, sample_id, userid, dbid, queryid,
         toplevel, seconds, reset, calls, rows, exec_ms, plans, plan_ms,
         shared_blks_hit, shared_blks_read, shared_blks_dirtied,
         shared_blks_written, temp_blks_read, temp_blks_written, wal_bytes,
         source
  FROM pgsentinel_statements_history;

-- The statements ring of the test server holds only a few seconds of
-- readings: each check saves the helper's rows of its own statement as
-- soon as they are complete, and compares the archive with them.

-- 1. The archive holds the helper's rows, every column, once; the text is
-- copied once per statement and day.
SELECT coalesce(max(sample_id), 0) AS a FROM pg_stat_statements_history \gset
SELECT pgs_stmt_work(1);
SELECT queryid AS qid FROM pg_stat_statements
WHERE query = 'SELECT pgs_stmt_work($1)' AND toplevel \gset
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid));
SELECT set_config('pgs.qid', :'qid', false) IS NOT NULL AS qid_set;
-- each call read once it ended, before the next (the statements worker
-- would otherwise merge them into fewer readings when it is busy)
SELECT format('SELECT pgs_stmt_work(%s)', i),
       'SELECT pgs_wait_for(''pgs_stmt_caught_up(current_setting(''''pgs.qid'''')::bigint)'')'
FROM generate_series(2, 5) i \gexec
-- (bounded by the last reading now: a sweep may add readings at any time)
SELECT max(sample_id) AS b FROM pg_stat_statements_history \gset
CREATE TEMP TABLE saved1 AS
  SELECT * FROM helper_rows
  WHERE queryid = :qid AND sample_id > :a AND sample_id <= :b;
SELECT count(*) > 0 AS deltas_of_the_work, sum(calls) > 0 AS calls_counted
FROM saved1;
SELECT pgs_wait_for(format('pgs_stmt_archived(%s)', :b));
SELECT count(*) AS rows_that_differ FROM (
    (SELECT * FROM saved1
     EXCEPT ALL
     SELECT * FROM archive_rows
     WHERE queryid = :qid AND sample_id > :a AND sample_id <= :b)
    UNION ALL
    (SELECT * FROM archive_rows
     WHERE queryid = :qid AND sample_id > :a AND sample_id <= :b
     EXCEPT ALL
     SELECT * FROM saved1)) d;
SELECT array_agg(DISTINCT source) AS sources,
       count(*) = (SELECT count(*) FROM saved1) AS each_reading_once
FROM history_rows WHERE queryid = :qid AND sample_id > :a AND sample_id <= :b;
SELECT count(*) AS readings_counted_twice FROM (
    SELECT sample_id, userid, dbid, queryid, toplevel
    FROM pgsentinel_statements_history
    GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1) d;
-- readings in which nothing moved are counted, not stored
SELECT statements_rows_archived > 0 AS rows_archived,
       statements_rows_unchanged > 0 AS unchanged_not_stored,
       statements_history_id = pgsentinel_history_id() AS same_history
FROM pgsentinel_archive_state;
SELECT DISTINCT query FROM pgsentinel_statements_archive
WHERE queryid = :qid AND toplevel;
-- (one text per UTC day: a run across midnight has two)
SELECT count(*) > 0 AS text_of_the_work,
       count(*) = count(DISTINCT day) AS one_text_per_day
FROM pgsentinel_archive_statement_text WHERE queryid = :qid;

-- 2. The archiver held back (a lock on its table): the combined view
-- shows the ring's deltas; once it catches up, the archive's, the same.
BEGIN;
LOCK TABLE pgsentinel_archive_statement_batch IN EXCLUSIVE MODE;
SELECT coalesce(max(sample_id), 0) AS a2 FROM pg_stat_statements_history \gset
SELECT pgs_stmt_work(1), 2;
SELECT queryid AS qid2 FROM pg_stat_statements
WHERE query = 'SELECT pgs_stmt_work($1), $2' AND toplevel \gset
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid2));
SELECT set_config('pgs.qid2', :'qid2', false) IS NOT NULL AS qid2_set;
SELECT format('SELECT pgs_stmt_work(%s), 2', i),
       'SELECT pgs_wait_for(''pgs_stmt_caught_up(current_setting(''''pgs.qid2'''')::bigint)'')'
FROM generate_series(2, 3) i \gexec
SELECT max(sample_id) AS b2 FROM pg_stat_statements_history \gset
CREATE TEMP TABLE saved2 AS
  SELECT * FROM helper_rows
  WHERE queryid = :qid2 AND sample_id > :a2 AND sample_id <= :b2;
SELECT count(*) > 0 AS deltas_of_the_work,
       min(sample_id) > (SELECT statements_last_sample_id FROM pgsentinel_archive_state)
         AS not_archived_yet
FROM saved2;
SELECT count(*) AS rows_that_differ FROM (
    (SELECT * FROM saved2
     EXCEPT ALL
     SELECT ash_time, prev_ash_time, sample_id, userid, dbid, queryid,
            toplevel, seconds, reset, calls, rows, exec_ms, plans, plan_ms,
            shared_blks_hit, shared_blks_read, shared_blks_dirtied,
            shared_blks_written, temp_blks_read, temp_blks_written, wal_bytes
     FROM history_rows WHERE queryid = :qid2 AND sample_id > :a2
       AND sample_id <= :b2)
    UNION ALL
    (SELECT ash_time, prev_ash_time, sample_id, userid, dbid, queryid,
            toplevel, seconds, reset, calls, rows, exec_ms, plans, plan_ms,
            shared_blks_hit, shared_blks_read, shared_blks_dirtied,
            shared_blks_written, temp_blks_read, temp_blks_written, wal_bytes
     FROM history_rows WHERE queryid = :qid2 AND sample_id > :a2
       AND sample_id <= :b2
     EXCEPT ALL
     SELECT * FROM saved2)) d;
SELECT array_agg(DISTINCT source) AS sources
FROM history_rows WHERE queryid = :qid2 AND sample_id > :a2;
COMMIT;
SELECT pgs_wait_for(format('pgs_stmt_archived(%s)', :b2));
SELECT count(*) AS rows_that_differ FROM (
    (SELECT * FROM saved2
     EXCEPT ALL
     SELECT * FROM archive_rows WHERE queryid = :qid2 AND sample_id > :a2
       AND sample_id <= :b2)
    UNION ALL
    (SELECT * FROM archive_rows WHERE queryid = :qid2 AND sample_id > :a2
       AND sample_id <= :b2
     EXCEPT ALL
     SELECT * FROM saved2)) d;
SELECT array_agg(DISTINCT source) AS sources
FROM history_rows WHERE queryid = :qid2 AND sample_id > :a2;

-- 3. pg_stat_statements forgets the statements: their texts stay in the
-- archive; their counters start again, and the interval across is a
-- reset, as the helper shows it.
SELECT coalesce(max(sample_id), 0) AS a3 FROM pg_stat_statements_history \gset
SELECT pgs_stmt_work(1), 3, 3;
SELECT queryid AS qid3 FROM pg_stat_statements
WHERE query = 'SELECT pgs_stmt_work($1), $2, $3' AND toplevel \gset
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid3));
SELECT pgs_stmt_work(2), 3, 3;
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid3));
-- (archived before the reset, with its text: a statement first archived
-- after it has none that day, section 3b)
SELECT max(sample_id) AS b3a FROM pg_stat_statements_history \gset
SELECT pgs_wait_for(format('pgs_stmt_archived(%s)', :b3a));
SELECT pg_stat_statements_reset() IS NOT NULL AS pgss_reset;
SELECT count(*) AS pgss_entries FROM pg_stat_statements
WHERE queryid IN (:qid, :qid3);
SELECT DISTINCT query FROM pgsentinel_statements_archive
WHERE queryid = :qid AND toplevel;
SELECT pgs_stmt_work(3), 3, 3;
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid3));
SELECT max(sample_id) AS b3 FROM pg_stat_statements_history \gset
CREATE TEMP TABLE saved3 AS
  SELECT * FROM helper_rows
  WHERE queryid = :qid3 AND sample_id > :a3 AND sample_id <= :b3;
SELECT pgs_wait_for(format('pgs_stmt_archived(%s)', :b3));
SELECT count(*) AS rows_that_differ FROM (
    (SELECT * FROM saved3
     EXCEPT ALL
     SELECT * FROM archive_rows
     WHERE queryid = :qid3 AND sample_id > :a3 AND sample_id <= :b3)
    UNION ALL
    (SELECT * FROM archive_rows
     WHERE queryid = :qid3 AND sample_id > :a3 AND sample_id <= :b3
     EXCEPT ALL
     SELECT * FROM saved3)) d;
SELECT reset, calls IS NULL AS deltas_null, query
FROM pgsentinel_statements_archive
WHERE queryid = :qid3 AND toplevel AND sample_id > :a3 AND reset;

-- 3b. A statement pg_stat_statements forgot before its first delta was
-- archived has no text anywhere: it is looked for once that day (a map row
-- without a text), not read from pg_stat_statements at every step.
BEGIN;
LOCK TABLE pgsentinel_archive_statement_batch IN EXCLUSIVE MODE;
SELECT pgs_stmt_work(1), 4, 4, 4;
SELECT queryid AS qid4 FROM pg_stat_statements
WHERE query = 'SELECT pgs_stmt_work($1), $2, $3, $4' AND toplevel \gset
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid4));
SELECT pgs_stmt_work(2), 4, 4, 4;
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid4));
SELECT max(sample_id) AS b4 FROM pg_stat_statements_history \gset
SELECT pg_stat_statements_reset() IS NOT NULL AS pgss_reset;
COMMIT;
SELECT pgs_wait_for(format('pgs_stmt_archived(%s)', :b4));
SELECT count(*) > 0 AS day_mapped, count(*) = count(DISTINCT day) AS one_map_per_day,
       count(text_id) AS with_text
FROM pgsentinel_archive_statement_text WHERE queryid = :qid4;
SELECT count(*) > 0 AS deltas_archived, bool_and(query IS NULL) AS without_text
FROM pgsentinel_statements_archive WHERE queryid = :qid4;

-- 4. Another role sees every row, and the queryid and text of its own
-- statements only, unless it has the privileges of pg_read_all_stats.
-- (a session of its own: the sessions it sees are those it logged in)
CREATE ROLE regress_pgs_stmt_reader LOGIN;
SELECT current_user AS su \gset
\c - regress_pgs_stmt_reader
-- (each call's final reading waited for: a slow statements worker may
-- otherwise read the three calls once, and one reading has no delta)
SELECT pgs_stmt_work(7);
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid));
SELECT pgs_stmt_work(8);
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid));
SELECT pgs_stmt_work(9);
SELECT pgs_wait_for(format('pgs_stmt_caught_up(%s)', :qid));
SELECT max(sample_id) AS d FROM pg_stat_statements_history \gset
\c - :su
SELECT pgs_wait_for(format('pgs_stmt_archived(%s)', :d));
\c - regress_pgs_stmt_reader
SELECT count(*) > 0 AS others_rows_shown,
       bool_and(queryid IS NULL) AS others_queryid_hidden,
       bool_and(query = '<insufficient privilege>') AS others_text_hidden
FROM pgsentinel_statements_archive
WHERE sample_id > :a AND userid <> current_user::regrole;
SELECT DISTINCT queryid = :qid AS own_queryid, query AS own_text
FROM pgsentinel_statements_archive
WHERE sample_id > :a3 AND userid = current_user::regrole AND toplevel
  AND query = 'SELECT pgs_stmt_work($1)';
SELECT count(*) > 0 AS history_readable,
       count(*) FILTER (WHERE userid <> current_user::regrole
                          AND queryid IS NOT NULL) AS others_queryid_shown
FROM pgsentinel_statements_history WHERE sample_id > :a;
SELECT count(*) AS archive_table_readable FROM pgsentinel_archive_statement_delta;
\c - :su
GRANT pg_read_all_stats TO regress_pgs_stmt_reader;
SET ROLE regress_pgs_stmt_reader;
SELECT bool_and(queryid IS NOT NULL) AS all_queryids_shown,
       bool_and(query IS DISTINCT FROM '<insufficient privilege>') AS all_texts_shown
FROM pgsentinel_statements_archive WHERE sample_id > :a;
RESET ROLE;
DROP ROLE regress_pgs_stmt_reader;

DROP FUNCTION pgs_stmt_work(int), pgs_stmt_caught_up(bigint),
    pgs_stmt_archived(bigint);
RESET client_min_messages;
