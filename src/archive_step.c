/*-------------------------------------------------------------------------
 *
 * archive_step.c
 *		What the archiver does in the database, in SQL run through SPI:
 *		one step copies the samples after the watermark from the rings into
 *		the archive tables and moves the watermark, in one statement; the
 *		partitions are created ahead and dropped after their retention.
 *
 * Exactly once: the step reads the watermark with FOR UPDATE and writes it
 * in the same statement as the rows, so the rows and the watermark commit
 * or roll back together, and two steps never run at once.  The watermark
 * is (history id, last sample id, last sample time): within the history
 * it names, the step goes on after the sample id; in another history (the
 * ring started again empty after a crash, or this is a promoted standby
 * whose ring sampled other sessions) it goes on after the time, so that a
 * window is never archived twice.  Samples the ring lost before they were
 * archived are counted (ids skipped within a history, and rows of active
 * sessions a sample wrote that are no longer in the ring).
 *
 * Downsampling: a sample is kept when sample_id % keep_one_in = 0; the
 * others are skipped and counted, and each kept row weighs its sample's
 * period times keep_one_in.  Rollups are added to in the same statement,
 * from the kept rows, so that they always equal the sums of the raw rows.
 *
 * The SQL runs with search_path = pg_catalog, pg_temp, set for the
 * transaction, and names the extension's objects with its schema: nothing
 * a role may create in that schema is ever resolved instead of core's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "pgsentinel.h"

/*
 * How a bucket's part of the blocking trees adds to the one already kept
 * (the same for the hour and the minute rollups): counts and times summed,
 * the deepest level and all blockers kept, the names of the latest row.
 */
#define BLOCKING_ROLLUP_UPSERT \
"  ON CONFLICT (bucket, kind, root_pid, pid, key_usesysid)" \
"  DO UPDATE SET depth = greatest(t.depth, excluded.depth)," \
"                blocked_by = (SELECT array_agg(DISTINCT x ORDER BY x)" \
"                                FROM unnest(t.blocked_by || excluded.blocked_by) x)," \
"                samples = t.samples + excluded.samples," \
"                db_time = t.db_time + excluded.db_time," \
"                usesysid = CASE WHEN excluded.last_time >= t.last_time" \
"                                THEN excluded.usesysid ELSE t.usesysid END," \
"                usename = CASE WHEN excluded.last_time >= t.last_time" \
"                               THEN excluded.usename ELSE t.usename END," \
"                state = CASE WHEN excluded.last_time >= t.last_time" \
"                             THEN excluded.state ELSE t.state END," \
"                wait_event_type = CASE WHEN excluded.last_time >= t.last_time" \
"                     THEN excluded.wait_event_type ELSE t.wait_event_type END," \
"                wait_event = CASE WHEN excluded.last_time >= t.last_time" \
"                                  THEN excluded.wait_event ELSE t.wait_event END," \
"                query = CASE WHEN excluded.last_time >= t.last_time" \
"                             THEN excluded.query ELSE t.query END," \
"                application_name = CASE WHEN excluded.last_time >= t.last_time" \
"                     THEN excluded.application_name ELSE t.application_name END," \
"                client_addr = CASE WHEN excluded.last_time >= t.last_time" \
"                     THEN excluded.client_addr ELSE t.client_addr END," \
"                xact_start = CASE WHEN excluded.last_time >= t.last_time" \
"                     THEN excluded.xact_start ELSE t.xact_start END," \
"                first_time = least(t.first_time, excluded.first_time)," \
"                last_time = greatest(t.last_time, excluded.last_time)),"

/*
 * The step.  %1$s is the extension's schema, quoted; $1 keep_one_in, $2
 * the most samples to take, $3 the oldest time the retention keeps
 * (older samples are skipped: their partitions are gone), $4 the first
 * sample not to take yet (archive_hold_before()).  Returns the samples seen, kept, rows
 * archived, samples and rows lost, and whether more samples wait.
 */
static const char *const step_sql =
"WITH st AS MATERIALIZED ("
"  SELECT s.history_id, s.last_sample_id, s.last_sample_time"
"    FROM %1$s.pgsentinel_archive_state s FOR UPDATE),"
" hid AS MATERIALIZED (SELECT %1$s.pgsentinel_history_id() AS id),"
" ring AS MATERIALIZED ("
"  SELECT p.sample_id, p.sample_time, p.sample_period, p.active_sessions"
"    FROM %1$s.pgsentinel_samples() p, st, hid"
"   WHERE CASE WHEN st.history_id = hid.id"
"              THEN p.sample_id > st.last_sample_id"
"              ELSE p.sample_time > coalesce(st.last_sample_time, '-infinity') END"
"     AND p.sample_id < $4"
"   ORDER BY p.sample_id LIMIT $2),"
" kept AS MATERIALIZED ("
"  SELECT * FROM ring WHERE ring.sample_id %% $1 = 0 AND ring.sample_time >= $3),"
" rws AS MATERIALIZED ("
"  SELECT r.*, timezone('UTC', r.ash_time)::date AS day"
"    FROM %1$s.pgsentinel_ash_ring r"
"   WHERE r.sample_id >= (SELECT min(k.sample_id) FROM kept k)"
"     AND r.sample_id <= (SELECT max(k.sample_id) FROM kept k)"
"     AND r.sample_id IN (SELECT k.sample_id FROM kept k)),"
/* texts, once per day */
" txt AS MATERIALIZED ("
"  SELECT DISTINCT x.day, t.text, hashtextextended(t.text, 0) AS hash"
"    FROM rws x, LATERAL (VALUES (x.top_level_query), (x.query)) t(text)"
"   WHERE t.text IS NOT NULL),"
" txt_old AS MATERIALIZED ("
"  SELECT x.day, x.text, o.text_id"
"    FROM txt x JOIN %1$s.pgsentinel_archive_text o"
"      ON o.day = x.day AND o.hash = x.hash AND o.text = x.text),"
" txt_new AS ("
"  INSERT INTO %1$s.pgsentinel_archive_text (day, text_id, hash, text)"
"  SELECT x.day,"
"         coalesce((SELECT max(o.text_id) FROM %1$s.pgsentinel_archive_text o"
"                    WHERE o.day = x.day), 0)"
"         + row_number() OVER (PARTITION BY x.day ORDER BY x.hash, x.text),"
"         x.hash, x.text"
"    FROM txt x"
"   WHERE NOT EXISTS (SELECT FROM txt_old y"
"                      WHERE y.day = x.day AND y.text = x.text)"
"  RETURNING day, text, text_id),"
" txt_all AS MATERIALIZED ("
"  SELECT day, text, text_id FROM txt_old"
"  UNION ALL SELECT day, text, text_id FROM txt_new),"
/* wait events by name */
" we AS MATERIALIZED ("
"  SELECT DISTINCT x.wait_event_type, x.wait_event FROM rws x),"
" we_new AS ("
"  INSERT INTO %1$s.pgsentinel_archive_wait_event"
"         (wait_event_id, wait_event_type, wait_event)"
"  SELECT coalesce((SELECT max(o.wait_event_id)"
"                     FROM %1$s.pgsentinel_archive_wait_event o), 0)"
"         + row_number() OVER (ORDER BY w.wait_event_type, w.wait_event),"
"         w.wait_event_type, w.wait_event"
"    FROM we w"
"   WHERE NOT EXISTS (SELECT FROM %1$s.pgsentinel_archive_wait_event o"
"                      WHERE o.wait_event_type IS NOT DISTINCT FROM w.wait_event_type"
"                        AND o.wait_event IS NOT DISTINCT FROM w.wait_event)"
"  RETURNING wait_event_id, wait_event_type, wait_event),"
" we_all AS MATERIALIZED ("
"  SELECT o.wait_event_id, o.wait_event_type, o.wait_event"
"    FROM %1$s.pgsentinel_archive_wait_event o"
"  UNION ALL SELECT * FROM we_new),"
/* each row with what is stored once per activity, and its hash */
" full_rows AS MATERIALIZED ("
"  SELECT x.*, tt.text_id AS top_level_query_id, qt.text_id AS query_id,"
"         w.wait_event_id,"
"         hashtextextended(ROW(x.datid, x.datname, x.pid, x.leader_pid,"
"             x.usesysid, x.usename, x.application_name, x.client_addr,"
"             x.client_hostname, x.client_port, x.backend_start,"
"             x.xact_start, x.query_start, x.state_change, x.state,"
"             x.backend_xid, x.backend_xmin, tt.text_id, qt.text_id,"
"             x.cmdtype, x.queryid, x.nested_queryid,"
"             x.backend_type)::text, 0) AS hash"
"    FROM rws x"
"    LEFT JOIN txt_all tt ON tt.day = x.day AND tt.text = x.top_level_query"
"    LEFT JOIN txt_all qt ON qt.day = x.day AND qt.text = x.query"
"    JOIN we_all w ON w.wait_event_type IS NOT DISTINCT FROM x.wait_event_type"
"                 AND w.wait_event IS NOT DISTINCT FROM x.wait_event),"
" act AS MATERIALIZED ("
"  SELECT DISTINCT f.day, f.hash, f.datid, f.datname, f.pid, f.leader_pid,"
"         f.usesysid, f.usename, f.application_name, f.client_addr,"
"         f.client_hostname, f.client_port, f.backend_start, f.xact_start,"
"         f.query_start, f.state_change, f.state, f.backend_xid,"
"         f.backend_xmin, f.top_level_query_id, f.query_id, f.cmdtype,"
"         f.queryid, f.nested_queryid, f.backend_type"
"    FROM full_rows f),"
" act_old AS MATERIALIZED ("
"  SELECT a.*, o.activity_id"
"    FROM act a JOIN %1$s.pgsentinel_archive_activity o"
"      ON o.day = a.day AND o.hash = a.hash"
"     AND (o.datid, o.datname, o.pid, o.leader_pid, o.usesysid, o.usename,"
"          o.application_name, o.client_addr, o.client_hostname,"
"          o.client_port, o.backend_start, o.xact_start, o.query_start,"
"          o.state_change, o.state, o.backend_xid, o.backend_xmin,"
"          o.top_level_query_id, o.query_id, o.cmdtype, o.queryid,"
"          o.nested_queryid, o.backend_type)"
"         IS NOT DISTINCT FROM"
"         (a.datid, a.datname, a.pid, a.leader_pid, a.usesysid, a.usename,"
"          a.application_name, a.client_addr, a.client_hostname,"
"          a.client_port, a.backend_start, a.xact_start, a.query_start,"
"          a.state_change, a.state, a.backend_xid, a.backend_xmin,"
"          a.top_level_query_id, a.query_id, a.cmdtype, a.queryid,"
"          a.nested_queryid, a.backend_type)),"
" act_new AS ("
"  INSERT INTO %1$s.pgsentinel_archive_activity (day, activity_id, hash,"
"         datid, datname, pid, leader_pid, usesysid, usename,"
"         application_name, client_addr, client_hostname, client_port,"
"         backend_start, xact_start, query_start, state_change, state,"
"         backend_xid, backend_xmin, top_level_query_id, query_id, cmdtype,"
"         queryid, nested_queryid, backend_type)"
"  SELECT a.day,"
"         coalesce((SELECT max(o.activity_id)"
"                     FROM %1$s.pgsentinel_archive_activity o"
"                    WHERE o.day = a.day), 0)"
"         + row_number() OVER (PARTITION BY a.day ORDER BY a.hash),"
"         a.hash, a.datid, a.datname, a.pid, a.leader_pid, a.usesysid,"
"         a.usename, a.application_name, a.client_addr, a.client_hostname,"
"         a.client_port, a.backend_start, a.xact_start, a.query_start,"
"         a.state_change, a.state, a.backend_xid, a.backend_xmin,"
"         a.top_level_query_id, a.query_id, a.cmdtype, a.queryid,"
"         a.nested_queryid, a.backend_type"
"    FROM act a"
"   WHERE NOT EXISTS (SELECT FROM act_old y WHERE y.day = a.day"
"                        AND y.hash = a.hash"
"                        AND (y.datid, y.datname, y.pid, y.leader_pid,"
"                             y.usesysid, y.usename, y.application_name,"
"                             y.client_addr, y.client_hostname,"
"                             y.client_port, y.backend_start, y.xact_start,"
"                             y.query_start, y.state_change, y.state,"
"                             y.backend_xid, y.backend_xmin,"
"                             y.top_level_query_id, y.query_id, y.cmdtype,"
"                             y.queryid, y.nested_queryid, y.backend_type)"
"                            IS NOT DISTINCT FROM"
"                            (a.datid, a.datname, a.pid, a.leader_pid,"
"                             a.usesysid, a.usename, a.application_name,"
"                             a.client_addr, a.client_hostname,"
"                             a.client_port, a.backend_start, a.xact_start,"
"                             a.query_start, a.state_change, a.state,"
"                             a.backend_xid, a.backend_xmin,"
"                             a.top_level_query_id, a.query_id, a.cmdtype,"
"                             a.queryid, a.nested_queryid, a.backend_type))"
"  RETURNING *),"
" act_all AS MATERIALIZED ("
"  SELECT day, hash, activity_id, datid, datname, pid, leader_pid, usesysid,"
"         usename, application_name, client_addr, client_hostname,"
"         client_port, backend_start, xact_start, query_start, state_change,"
"         state, backend_xid, backend_xmin, top_level_query_id, query_id,"
"         cmdtype, queryid, nested_queryid, backend_type FROM act_old"
"  UNION ALL"
"  SELECT day, hash, activity_id, datid, datname, pid, leader_pid, usesysid,"
"         usename, application_name, client_addr, client_hostname,"
"         client_port, backend_start, xact_start, query_start, state_change,"
"         state, backend_xid, backend_xmin, top_level_query_id, query_id,"
"         cmdtype, queryid, nested_queryid, backend_type FROM act_new),"
" mapped AS MATERIALIZED ("
"  SELECT f.*, a.activity_id"
"    FROM full_rows f JOIN act_all a"
"      ON a.day = f.day AND a.hash = f.hash"
"     AND (a.datid, a.datname, a.pid, a.leader_pid, a.usesysid, a.usename,"
"          a.application_name, a.client_addr, a.client_hostname,"
"          a.client_port, a.backend_start, a.xact_start, a.query_start,"
"          a.state_change, a.state, a.backend_xid, a.backend_xmin,"
"          a.top_level_query_id, a.query_id, a.cmdtype, a.queryid,"
"          a.nested_queryid, a.backend_type)"
"         IS NOT DISTINCT FROM"
"         (f.datid, f.datname, f.pid, f.leader_pid, f.usesysid, f.usename,"
"          f.application_name, f.client_addr, f.client_hostname,"
"          f.client_port, f.backend_start, f.xact_start, f.query_start,"
"          f.state_change, f.state, f.backend_xid, f.backend_xmin,"
"          f.top_level_query_id, f.query_id, f.cmdtype, f.queryid,"
"          f.nested_queryid, f.backend_type)),"
/*
 * one row per kept sample, its rows as arrays: grouped once, not looked up
 * per sample (a step of thousands of samples would read every row for each)
 */
" per_sample AS MATERIALIZED ("
"  SELECT m.sample_id, (count(*) FILTER (WHERE m.weight > 0))::int4 AS n,"
"         array_agg(m.activity_id ORDER BY m.pid) AS activity_ids,"
"         array_agg(m.wait_event_id ORDER BY m.pid) AS wait_event_ids,"
"         CASE WHEN bool_or(m.blockers > 0) THEN"
"           array_agg(m.blockers ORDER BY m.pid) END AS blockers,"
"         CASE WHEN bool_or(m.blockers > 0) THEN"
"           array_agg(m.blockerpid ORDER BY m.pid) END AS blockerpids,"
"         CASE WHEN bool_or(m.blockers > 0) THEN"
"           array_agg(m.blocker_state ORDER BY m.pid) END AS blocker_states,"
"         CASE WHEN bool_or(m.blockers > 0) THEN"
"           array_agg(m.blocker_usesysid ORDER BY m.pid) END AS blocker_usesysids,"
"         CASE WHEN bool_or(m.blockers > 0) THEN"
"           array_agg(CASE WHEN m.blockers > 0 THEN m.blocking_pids::text END"
"                     ORDER BY m.pid) END AS blocking_pids"
"    FROM mapped m GROUP BY m.sample_id),"
" samples AS ("
"  INSERT INTO %1$s.pgsentinel_archive_sample (sample_time, sample_id,"
"         sample_period, weight, active_sessions, activity_ids,"
"         wait_event_ids, blockers, blockerpids, blocker_states,"
"         blocker_usesysids, blocking_pids)"
"  SELECT k.sample_time, k.sample_id, k.sample_period,"
"         k.sample_period * $1, coalesce(g.n, 0), g.activity_ids,"
"         g.wait_event_ids, g.blockers, g.blockerpids, g.blocker_states,"
"         g.blocker_usesysids, g.blocking_pids"
"    FROM kept k LEFT JOIN per_sample g ON g.sample_id = k.sample_id"
"  RETURNING sample_id, active_sessions),"
/* rollups, from the same rows */
" roll_minute AS ("
"  INSERT INTO %1$s.pgsentinel_rollup_minute AS t (bucket, datname, usesysid,"
"         usename, application_name, backend_type, wait_event_type,"
"         wait_event, queryid, db_time, rows)"
"  SELECT date_trunc('minute', m.ash_time, 'UTC'), m.datname, m.usesysid,"
"         m.usename, m.application_name, m.backend_type, m.wait_event_type,"
"         m.wait_event, m.queryid, sum(m.weight * $1), count(*)"
"    FROM mapped m WHERE m.weight > 0 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
"  ON CONFLICT (bucket, datname, usesysid, usename, application_name,"
"               backend_type, wait_event_type, wait_event, queryid)"
"  DO UPDATE SET db_time = t.db_time + excluded.db_time,"
"                rows = t.rows + excluded.rows),"
" roll_hour AS ("
"  INSERT INTO %1$s.pgsentinel_rollup_hour AS t (bucket, datname, usesysid,"
"         usename, application_name, backend_type, wait_event_type,"
"         wait_event, queryid, db_time, rows)"
"  SELECT date_trunc('hour', m.ash_time, 'UTC'), m.datname, m.usesysid,"
"         m.usename, m.application_name, m.backend_type, m.wait_event_type,"
"         m.wait_event, m.queryid, sum(m.weight * $1), count(*)"
"    FROM mapped m WHERE m.weight > 0 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
"  ON CONFLICT (bucket, datname, usesysid, usename, application_name,"
"               backend_type, wait_event_type, wait_event, queryid)"
"  DO UPDATE SET db_time = t.db_time + excluded.db_time,"
"                rows = t.rows + excluded.rows),"
" roll_session_hour AS ("
"  INSERT INTO %1$s.pgsentinel_rollup_session_hour AS t (bucket, pid, datname,"
"         usesysid, usename, application_name, client_addr, backend_type,"
"         wait_event_type, wait_event, db_time, rows, last_time)"
"  SELECT date_trunc('hour', m.ash_time, 'UTC'), m.pid, m.datname,"
"         m.usesysid, m.usename, m.application_name, m.client_addr,"
"         m.backend_type, m.wait_event_type, m.wait_event,"
"         sum(m.weight * $1), count(*), max(m.ash_time)"
"    FROM mapped m WHERE m.weight > 0 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10"
"  ON CONFLICT (bucket, pid, datname, usesysid, usename, application_name,"
"               client_addr, backend_type, wait_event_type, wait_event)"
"  DO UPDATE SET db_time = t.db_time + excluded.db_time,"
"                rows = t.rows + excluded.rows,"
"                last_time = greatest(t.last_time, excluded.last_time)),"
" roll_session_minute AS ("
"  INSERT INTO %1$s.pgsentinel_rollup_session_minute AS t (bucket, pid, datname,"
"         usesysid, usename, application_name, client_addr, backend_type,"
"         wait_event_type, wait_event, db_time, rows, last_time)"
"  SELECT date_trunc('minute', m.ash_time, 'UTC'), m.pid, m.datname,"
"         m.usesysid, m.usename, m.application_name, m.client_addr,"
"         m.backend_type, m.wait_event_type, m.wait_event,"
"         sum(m.weight * $1), count(*), max(m.ash_time)"
"    FROM mapped m WHERE m.weight > 0 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10"
"  ON CONFLICT (bucket, pid, datname, usesysid, usename, application_name,"
"               client_addr, backend_type, wait_event_type, wait_event)"
"  DO UPDATE SET db_time = t.db_time + excluded.db_time,"
"                rows = t.rows + excluded.rows,"
"                last_time = greatest(t.last_time, excluded.last_time)),"
/* the rows of the samples with a blocked session (a join: few such samples) */
" bl_samples AS MATERIALIZED ("
"  SELECT DISTINCT y.sample_id FROM mapped y WHERE y.blockers > 0),"
" bl_rows AS MATERIALIZED ("
"  SELECT coalesce(jsonb_agg(jsonb_build_object("
"               'ash_time', m.ash_time, 'sample_id', m.sample_id,"
"               'pid', m.pid, 'weight', m.weight * $1,"
"               'usesysid', m.usesysid, 'usename', m.usename,"
"               'application_name', m.application_name,"
"               'client_addr', m.client_addr, 'xact_start', m.xact_start,"
"               'state', m.state, 'wait_event_type', m.wait_event_type,"
"               'wait_event', m.wait_event, 'query', m.top_level_query,"
"               'blocking', CASE WHEN m.blockers > 0"
"                                 AND cardinality(m.blocking_pids) > 0"
"                                THEN m.blocking_pids"
"                                WHEN m.blockerpid IS NOT NULL"
"                                THEN ARRAY[m.blockerpid] END,"
"               'blockerpid', m.blockerpid, 'blocker_state', m.blocker_state,"
"               'blocker_usesysid', m.blocker_usesysid)), '[]') AS rows"
"      FROM mapped m JOIN bl_samples b ON b.sample_id = m.sample_id),"
" roll_blocking_hour AS ("
"  INSERT INTO %1$s.pgsentinel_rollup_blocking_hour AS t (bucket, kind,"
"         root_pid, pid, key_usesysid, depth, blocked_by, samples, db_time,"
"         last_time, usesysid, usename, state, wait_event_type, wait_event,"
"         query, first_time, application_name, client_addr, xact_start)"
"  SELECT b.* FROM bl_rows r, %1$s.pgsentinel_blocking_parts(r.rows, 'hour'::text) b"
BLOCKING_ROLLUP_UPSERT
" roll_blocking_minute AS ("
"  INSERT INTO %1$s.pgsentinel_rollup_blocking_minute AS t (bucket, kind,"
"         root_pid, pid, key_usesysid, depth, blocked_by, samples, db_time,"
"         last_time, usesysid, usename, state, wait_event_type, wait_event,"
"         query, first_time, application_name, client_addr, xact_start)"
"  SELECT b.* FROM bl_rows r, %1$s.pgsentinel_blocking_parts(r.rows, 'minute'::text) b"
BLOCKING_ROLLUP_UPSERT
" obs_minute AS ("
"  INSERT INTO %1$s.pgsentinel_rollup_minute_observed AS t"
"         (bucket, samples, observed, peak)"
"  SELECT date_trunc('minute', k.sample_time, 'UTC'), count(*),"
"         sum(k.sample_period * $1), max(x.active_sessions)"
"    FROM kept k JOIN samples x ON x.sample_id = k.sample_id GROUP BY 1"
"  ON CONFLICT (bucket) DO UPDATE SET samples = t.samples + excluded.samples,"
"                                     observed = t.observed + excluded.observed,"
"                                     peak = greatest(t.peak, excluded.peak)),"
" obs_hour AS ("
"  INSERT INTO %1$s.pgsentinel_rollup_hour_observed AS t"
"         (bucket, samples, observed, peak)"
"  SELECT date_trunc('hour', k.sample_time, 'UTC'), count(*),"
"         sum(k.sample_period * $1), max(x.active_sessions)"
"    FROM kept k JOIN samples x ON x.sample_id = k.sample_id GROUP BY 1"
"  ON CONFLICT (bucket) DO UPDATE SET samples = t.samples + excluded.samples,"
"                                     observed = t.observed + excluded.observed,"
"                                     peak = greatest(t.peak, excluded.peak)),"
/* the watermark, with the counts */
" counts AS MATERIALIZED ("
"  SELECT (SELECT count(*) FROM ring) AS seen,"
"         (SELECT count(*) FROM kept) AS kept,"
"         (SELECT count(*) FROM mapped) AS rows,"
"         (SELECT CASE WHEN st.history_id = hid.id"
"                      THEN greatest(min(r.sample_id) - st.last_sample_id - 1, 0)"
"                      ELSE 0 END"
"            FROM ring r, st, hid GROUP BY st.history_id, hid.id,"
"                 st.last_sample_id) AS samples_lost,"
"         (SELECT coalesce(sum(greatest(k.active_sessions -"
"                                       coalesce(g.n, 0), 0)), 0)::int8"
"            FROM kept k LEFT JOIN per_sample g ON g.sample_id = k.sample_id)"
"         AS rows_lost),"
" upd AS ("
"  UPDATE %1$s.pgsentinel_archive_state s"
"     SET history_id = hid.id,"
"         last_sample_id = (SELECT max(r.sample_id) FROM ring r),"
"         last_sample_time = (SELECT max(r.sample_time) FROM ring r),"
"         samples_archived = s.samples_archived + c.kept,"
"         samples_skipped = s.samples_skipped + c.seen - c.kept,"
"         rows_archived = s.rows_archived + c.rows,"
"         samples_lost = s.samples_lost + coalesce(c.samples_lost, 0),"
"         rows_lost = s.rows_lost + c.rows_lost,"
"         last_archive_time = now()"
"    FROM hid, counts c"
"   WHERE c.seen > 0"
"  RETURNING s.last_sample_time)"
"SELECT c.seen::int8, c.kept::int8, c.rows::int8,"
"       coalesce(c.samples_lost, 0)::int8, c.rows_lost::int8,"
"       c.seen >= $2, (SELECT max(u.last_sample_time) FROM upd u)"
"  FROM counts c";

/*
 * The first sample the step may not take yet: the oldest with rows waiting
 * for their query id, while it is younger than PGS_ARCHIVE_HOLD_MAX_MS, or else
 * the next sample: one published after this reading may have such rows.
 */
static int64
archive_hold_before(void)
{
	int64		id;
	int64		next;
	TimestampTz time;

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	id = pgs_state->pending_sample_id;
	time = pgs_state->pending_sample_time;
	next = pgs_state->last_sample_id + 1;
	LWLockRelease(pgs_state->lock);
	if (id > 0 &&
		time > TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   -PGS_ARCHIVE_HOLD_MAX_MS))
		return id;
	return next;
}

/*
 * Run one step: archive at most max_samples samples after the watermark.
 * The caller holds a transaction, is connected to SPI and has set the
 * search path to pg_catalog, pg_temp.  schema is quoted (quote_identifier).  Fills *result.
 */
void
pgs_archive_step(const char *schema, int keep_one_in, int max_samples,
				 TimestampTz oldest_kept, PgsArchiveStepResult *result)
{
	StringInfoData sql;
	Oid			argtypes[4] = {INT4OID, INT4OID, TIMESTAMPTZOID, INT8OID};
	Datum		args[4];
	bool		isnull;
	int			ret;
	HeapTuple	tup;
	TupleDesc	desc;

	initStringInfo(&sql);
	appendStringInfo(&sql, step_sql, schema);
	args[0] = Int32GetDatum(keep_one_in);
	args[1] = Int32GetDatum(max_samples);
	args[2] = TimestampTzGetDatum(oldest_kept);
	args[3] = Int64GetDatum(archive_hold_before());
	ret = SPI_execute_with_args(sql.data, 4, argtypes, args, NULL, false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pgsentinel archive step: unexpected result %d", ret);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	result->samples_seen = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	result->samples_kept = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
	result->rows = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	result->samples_lost = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	result->rows_lost = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	result->more = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
	result->last_sample_time =
		DatumGetTimestampTz(SPI_getbinval(tup, desc, 7, &isnull));
	if (isnull)
		result->last_sample_time = 0;
	pfree(sql.data);
}

/*
 * The partitions the archive needs: raw samples and rollups by minute for
 * every day (UTC) from $1 to tomorrow, rollups by hour for their months
 * (sessions' and blocking trees' rollups both ways).
 * $2 is the schema's OID.  Returns the DDL of those
 * missing; $3 is the schema's name.  A relation of a partition's name that
 * is not that partition (attached to its parent, with the parent's owner)
 * was created by another role: it is never taken for ours, and its DDL is
 * an error that names it (docs/security.md).  A new partition keeps no
 * privilege that the schema's default privileges give other roles: it is
 * read through its parent, whose privileges and visibility rules apply.
 *
 * A partition is made apart, then attached: ATTACH PARTITION takes a lock
 * on the parent that neither readers nor inserts wait for, nor it for
 * them, where CREATE TABLE ... PARTITION OF takes an exclusive one: it
 * would wait for the longest report reading the archive, with every new
 * reader and the archive's steps queued behind it, and could deadlock
 * with a repository's apply worker inserting into two parents.  But where
 * the parent has a DEFAULT partition (a repository's landing partitions),
 * ATTACH also locks that one exclusively, and every reader of the parent
 * holds it: run_create_ddl() then leaves the partition for a later pass.
 * Each row: a statement, the partition's name, and for a partition to
 * make, its parent and the parent's DEFAULT partition (NULL if none); and
 * whether the partition is needed now (its range has begun).
 */
static const char *const create_sql =
"WITH days AS ("
"  SELECT d::date AS day"
"    FROM generate_series($1::timestamp,"
"                         timezone('UTC', now())::date + 1, '1 day') d),"
" want AS ("
"  SELECT p.parent, p.parent || '_' || to_char(d.day, 'YYYYMMDD') AS name,"
"         d.day <= timezone('UTC', now())::date AS needed,"
"         CASE WHEN p.by_date THEN d.day::text"
"              ELSE timezone('UTC', d.day::timestamp)::text END AS lo,"
"         CASE WHEN p.by_date THEN (d.day + 1)::text"
"              ELSE timezone('UTC', (d.day + 1)::timestamp)::text END AS hi"
"    FROM days d,"
"         (VALUES ('pgsentinel_archive_sample', false),"
"                 ('pgsentinel_archive_activity', true),"
"                 ('pgsentinel_archive_text', true),"
"                 ('pgsentinel_archive_stmt_delta', false),"
"                 ('pgsentinel_archive_stmt_text', true),"
"                 ('pgsentinel_rollup_minute', false),"
"                 ('pgsentinel_rollup_minute_observed', false),"
"                 ('pgsentinel_rollup_session_minute', false),"
"                 ('pgsentinel_rollup_blocking_minute', false)) p(parent, by_date)"
"  UNION ALL"
"  SELECT DISTINCT p.parent,"
"         p.parent || '_' || to_char(d.day, 'YYYYMM'),"
"         date_trunc('month', d.day) <= timezone('UTC', now())::date,"
"         timezone('UTC', date_trunc('month', d.day::timestamp))::text,"
"         timezone('UTC', date_trunc('month', d.day::timestamp)"
"                         + interval '1 month')::text"
"    FROM days d,"
"         (VALUES ('pgsentinel_rollup_hour'),"
"                 ('pgsentinel_rollup_hour_observed'),"
"                 ('pgsentinel_rollup_session_hour'),"
"                 ('pgsentinel_rollup_blocking_hour')) p(parent))"
"SELECT x.ddl, w.name, CASE WHEN c.oid IS NULL THEN pc.oid END,"
"       nullif(pt.partdefid, 0), w.needed"
"  FROM want w"
"  JOIN pg_class pc ON pc.relname = w.parent AND pc.relnamespace = $2"
"  JOIN pg_partitioned_table pt ON pt.partrelid = pc.oid"
"  LEFT JOIN pg_class c ON c.relname = w.name AND c.relnamespace = $2,"
"       LATERAL (VALUES (1, CASE WHEN c.oid IS NULL"
"                           THEN format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS"
"                                        INCLUDING STORAGE INCLUDING COMPRESSION)',"
"                                       $3, w.name, $3, w.parent)"
"                           ELSE format('DO $pgs$BEGIN RAISE EXCEPTION USING"
"                                        ERRCODE = ''duplicate_table'', MESSAGE = %L; END$pgs$',"
"                                       format('%I.%I, owned by %s, is in the way of an '"
"                                              || 'archive partition: drop or rename it',"
"                                              $3, w.name, pg_get_userbyid(c.relowner))) END),"
"                       (2, CASE WHEN c.oid IS NULL"
"                           THEN (SELECT format('REVOKE ALL ON TABLE %I.%I FROM %s',"
"                                               $3, w.name,"
"                                               string_agg(DISTINCT CASE WHEN a.grantee = 0"
"                                                   THEN 'PUBLIC'"
"                                                   ELSE quote_ident(pg_get_userbyid(a.grantee))"
"                                                   END, ', '))"
"                                   FROM pg_default_acl d, aclexplode(d.defaclacl) a"
"                                  WHERE d.defaclrole = (SELECT r.oid FROM pg_roles r"
"                                                         WHERE r.rolname = current_user)"
"                                    AND d.defaclobjtype = 'r'"
"                                    AND d.defaclnamespace IN (0, $2)"
"                                    AND a.grantee <> d.defaclrole"
"                                 HAVING count(*) > 0) END),"
"                       (3, CASE WHEN c.oid IS NULL"
"                           THEN format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I"
"                                        FOR VALUES FROM (%L) TO (%L)',"
"                                       $3, w.parent, $3, w.name, w.lo, w.hi) END)) x(step, ddl)"
" WHERE x.ddl IS NOT NULL"
"   AND NOT EXISTS (SELECT FROM pg_inherits i"
"                     JOIN pg_class p ON p.oid = i.inhparent"
"                    WHERE i.inhrelid = c.oid AND p.relname = w.parent"
"                      AND p.relnamespace = $2 AND p.relowner = c.relowner)"
" ORDER BY w.name, x.step";

/*
 * The partitions past their retention: raw days ending before $1, minute
 * rollup days ending before $2, hour rollup months ending before $3.
 * Partitions are recognized by their parent and their name's date suffix;
 * other tables attached by a user are left alone.  $4 is the schema's
 * OID, $5 its name.  Returns the DDL (IF EXISTS: one dropped by another
 * session since it was listed is gone), the partition, its parent and the
 * parent's DEFAULT partition (NULL if none).
 */
static const char *const drop_sql =
"SELECT format('DROP TABLE IF EXISTS %I.%I', $5, c.relname), c.oid, p.oid,"
"       nullif(pt.partdefid, 0)"
"  FROM pg_inherits i"
"  JOIN pg_class c ON c.oid = i.inhrelid"
"  JOIN pg_class p ON p.oid = i.inhparent"
"  JOIN pg_partitioned_table pt ON pt.partrelid = p.oid"
" WHERE p.relnamespace = $4 AND c.relnamespace = $4 AND c.relowner = p.relowner"
"   AND c.relname = p.relname || '_' || substring(c.relname from '[0-9]+$')"
"   AND CASE"
"       WHEN p.relname IN ('pgsentinel_archive_sample',"
"                          'pgsentinel_archive_activity',"
"                          'pgsentinel_archive_text',"
"                          'pgsentinel_archive_stmt_delta',"
"                          'pgsentinel_archive_stmt_text')"
"            AND c.relname ~ '_[0-9]{8}$'"
"       THEN to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= $1"
"       WHEN p.relname IN ('pgsentinel_rollup_minute',"
"                          'pgsentinel_rollup_minute_observed',"
"                          'pgsentinel_rollup_session_minute',"
"                          'pgsentinel_rollup_blocking_minute')"
"            AND c.relname ~ '_[0-9]{8}$'"
"       THEN to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= $2"
"       WHEN p.relname IN ('pgsentinel_rollup_hour',"
"                          'pgsentinel_rollup_hour_observed',"
"                          'pgsentinel_rollup_session_hour',"
"                          'pgsentinel_rollup_blocking_hour')"
"            AND c.relname ~ '_[0-9]{6}$'"
"       THEN (to_date(right(c.relname, 6), 'YYYYMM') + interval '1 month')::date <= $3"
"       ELSE false END"
" ORDER BY c.relname";

/* A DROP run_drop_ddl() runs, and what it must lock first. */
typedef struct DropDdl
{
	char	   *ddl;
	Oid			locks[3];		/* the partition, its parent, the DEFAULT */
} DropDdl;

/*
 * Run each DROP drop_sql returned, if the partition, its parent and the
 * parent's DEFAULT partition (if any: a DROP locks it too) can be locked at
 * once; it is left for a later call otherwise, and *skipped counts those
 * left.  Waiting for one while holding another could deadlock with a
 * session inserting into both parents, and the exclusive lock a DROP waits
 * for would queue every reader behind the longest one.  Returns the
 * partitions dropped; *busy_rel is the first relation that could not be
 * locked (unchanged if none).
 */
static int
run_drop_ddl(Datum *args, int *skipped, Oid *busy_rel)
{
	Oid			argtypes[5] = {DATEOID, DATEOID, DATEOID, OIDOID, TEXTOID};
	DropDdl    *todo;
	uint64		ntodo;
	int			run = 0;
	uint64		i;

	if (SPI_execute_with_args(drop_sql, 5, argtypes, args, NULL, true, 0) !=
		SPI_OK_SELECT)
		elog(ERROR, "pgsentinel archive partitions: could not list the expired ones");
	/* copied out: running a statement frees SPI_tuptable */
	ntodo = SPI_processed;
	todo = palloc0(sizeof(DropDdl) * Max(ntodo, 1));
	for (i = 0; i < ntodo; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			j;

		todo[i].ddl = SPI_getvalue(tuple, desc, 1);
		for (j = 0; j < 3; j++)
		{
			todo[i].locks[j] =
				DatumGetObjectId(SPI_getbinval(tuple, desc, j + 2, &isnull));
			if (isnull)
				todo[i].locks[j] = InvalidOid;
		}
	}
	*skipped = 0;
	for (i = 0; i < ntodo; i++)
	{
		int			got;

		/*
		 * The partition first: an exclusive lock is logged for standbys,
		 * which hold it to the commit even if released here, and the old
		 * partition is the one no standby reader minds.
		 */
		for (got = 0; got < 3; got++)
			if (OidIsValid(todo[i].locks[got]) &&
				!ConditionalLockRelationOid(todo[i].locks[got], AccessExclusiveLock))
				break;
		if (got < 3)
		{
			if (!OidIsValid(*busy_rel))
				*busy_rel = todo[i].locks[got];
			while (--got >= 0)
				if (OidIsValid(todo[i].locks[got]))
					UnlockRelationOid(todo[i].locks[got], AccessExclusiveLock);
			(*skipped)++;
			continue;
		}
		if (SPI_execute(todo[i].ddl, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "pgsentinel archive partitions: unexpected result running \"%s\"",
				 todo[i].ddl);
		run++;
	}
	pfree(todo);
	return run;
}

/*
 * Who holds a lock on relation rel, in words for pgsentinel_status(): the
 * oldest transaction of another backend holding it.  Written into buf.
 */
static void
describe_holder(Oid rel, char *buf, size_t len)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];

	args[0] = ObjectIdGetDatum(rel);
	if (SPI_execute_with_args("SELECT format('%s is in use by pid %s (role %s, in a transaction since %s)',"
							  "              $1::regclass, l.pid, coalesce(a.usename::text, '?'),"
							  "              coalesce(to_char(timezone('UTC', a.xact_start),"
							  "                               'YYYY-MM-DD HH24:MI:SS \"UTC\"'), '?'))"
							  "  FROM pg_locks l"
							  "  LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
							  " WHERE l.locktype = 'relation' AND l.relation = $1 AND l.granted"
							  "   AND l.pid <> pg_backend_pid()"
							  " ORDER BY a.xact_start NULLS LAST, l.pid LIMIT 1",
							  1, argtypes, args, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		strlcpy(buf, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
				len);
	else
		snprintf(buf, len, "relation %u is locked by another session", rel);
}

/*
 * Run the statements create_sql returned.  A partition is made only if the
 * locks its ATTACH takes can be had at once: its parent's, and its
 * parent's DEFAULT partition's, which every reader of the parent holds.
 * Waiting there would stop the archive for as long as the longest report
 * runs (up to lock_timeout, then the whole pass fails); the partition is
 * left for a later pass instead (*busy counts those), the day ahead of its
 * need.  One whose range has begun is waited for: the step needs it.
 * *busy_rel is the first relation that could not be locked (unchanged if
 * none).  Returns the partitions made.
 */
static int
run_create_ddl(Datum *args, int *busy, Oid *busy_rel)
{
	Oid			argtypes[3] = {DATEOID, OIDOID, TEXTOID};
	char	  **ddl;
	char	  **name;
	Oid		   *parent;
	Oid		   *deflt;
	bool	   *needed;
	char	   *skipping = NULL;
	uint64		n;
	uint64		i;
	int			made = 0;

	if (SPI_execute_with_args(create_sql, 3, argtypes, args, NULL, true, 0) !=
		SPI_OK_SELECT)
		elog(ERROR, "pgsentinel archive partitions: could not list them");
	/* copied out: running a statement frees SPI_tuptable */
	n = SPI_processed;
	ddl = palloc0(sizeof(char *) * Max(n, 1));
	name = palloc0(sizeof(char *) * Max(n, 1));
	parent = palloc0(sizeof(Oid) * Max(n, 1));
	deflt = palloc0(sizeof(Oid) * Max(n, 1));
	needed = palloc0(sizeof(bool) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		ddl[i] = SPI_getvalue(tuple, desc, 1);
		name[i] = SPI_getvalue(tuple, desc, 2);
		parent[i] = DatumGetObjectId(SPI_getbinval(tuple, desc, 3, &isnull));
		if (isnull)
			parent[i] = InvalidOid;
		deflt[i] = DatumGetObjectId(SPI_getbinval(tuple, desc, 4, &isnull));
		if (isnull)
			deflt[i] = InvalidOid;
		needed[i] = DatumGetBool(SPI_getbinval(tuple, desc, 5, &isnull));
	}

	*busy = 0;
	for (i = 0; i < n; i++)
	{
		bool		first = (i == 0 || strcmp(name[i], name[i - 1]) != 0);

		if (!first && skipping != NULL)
			continue;
		skipping = NULL;
		if (first && OidIsValid(parent[i]))
		{
			Oid			failed = InvalidOid;

			if (!ConditionalLockRelationOid(parent[i], ShareUpdateExclusiveLock))
				failed = parent[i];
			else if (OidIsValid(deflt[i]) &&
					 !ConditionalLockRelationOid(deflt[i], AccessExclusiveLock))
				failed = deflt[i];
			/*
			 * A partition whose range has begun is needed by the next step:
			 * wait for it as for any lock (up to lock_timeout).  This is
			 * also the case of a CREATE EXTENSION that the archiver sees
			 * committed before its locks are released.
			 */
			if (OidIsValid(failed) && needed[i])
			{
				LockRelationOid(parent[i], ShareUpdateExclusiveLock);
				if (OidIsValid(deflt[i]))
					LockRelationOid(deflt[i], AccessExclusiveLock);
				failed = InvalidOid;
			}
			if (OidIsValid(failed))
			{
				skipping = name[i];
				(*busy)++;
				if (!OidIsValid(*busy_rel))
					*busy_rel = failed;
				continue;
			}
			made++;
		}
		if (SPI_execute(ddl[i], false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "pgsentinel archive partitions: unexpected result running \"%s\"",
				 ddl[i]);
	}
	return made;
}

/* Midnight UTC of the day of t, as a date. */
static Datum
utc_day(TimestampTz t)
{
	return DirectFunctionCall1(timestamp_date,
							   DirectFunctionCall2(timestamptz_zone,
												   CStringGetTextDatum("UTC"),
												   TimestampTzGetDatum(t)));
}

/*
 * Create the partitions from the day of "from" to tomorrow, and drop those
 * past their retention (settings in minutes, counted from now) that no
 * one else holds; *busy counts the drops and *create_busy the partitions
 * to make left to a later call, and waiting (PGS_MESSAGE_LEN) says who
 * holds what the latter wait for ("" if nothing waits).  Returns the
 * partitions created, and those dropped in *dropped.  Same caller rules
 * as pgs_archive_step(), but schema is the name, not quoted.
 */
int
pgs_archive_partitions(const char *schema, Oid nspid, TimestampTz from,
					   int *dropped, int *busy, int *create_busy,
					   char *waiting)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		create_args[3];
	Datum		drop_args[5];
	int			created;
	Oid			busy_rel = InvalidOid;

	create_args[0] = utc_day(from);
	create_args[1] = ObjectIdGetDatum(nspid);
	create_args[2] = CStringGetTextDatum(schema);
	created = run_create_ddl(create_args, create_busy, &busy_rel);

	drop_args[0] = utc_day(now - (int64) pgs_archive_retention_min * USECS_PER_MINUTE);
	drop_args[1] = utc_day(now - (int64) pgs_archive_minute_retention_min * USECS_PER_MINUTE);
	drop_args[2] = utc_day(now - (int64) pgs_archive_hour_retention_min * USECS_PER_MINUTE);
	drop_args[3] = ObjectIdGetDatum(nspid);
	drop_args[4] = CStringGetTextDatum(schema);
	*dropped = run_drop_ddl(drop_args, busy, &busy_rel);

	waiting[0] = '\0';
	if (OidIsValid(busy_rel))
	{
		char		holder[PGS_MESSAGE_LEN];

		describe_holder(busy_rel, holder, sizeof(holder));
		snprintf(waiting, PGS_MESSAGE_LEN,
				 "partitions wait for a lock (%d to attach, %d expired to drop; tried every minute): %s",
				 *create_busy, *busy, holder);
	}
	return created;
}

/*
 * The oldest time the raw retention keeps: midnight UTC of the oldest day
 * not yet dropped.
 */
TimestampTz
pgs_archive_oldest_kept(void)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		day = utc_day(now - (int64) pgs_archive_retention_min * USECS_PER_MINUTE);

	return DatumGetTimestampTz(DirectFunctionCall2(timestamp_zone,
												   CStringGetTextDatum("UTC"),
												   DirectFunctionCall1(date_timestamp, day)));
}
