/*-------------------------------------------------------------------------
 *
 * archive_statements.c
 *		The statements history in the archive, in SQL run through SPI: one
 *		statement archives the readings of the statements ring after the
 *		statements' watermark as per-interval deltas, copies the texts of
 *		the statements it has not archived yet that day from
 *		pg_stat_statements, and moves the watermark.
 *
 * Exactly once, as for the samples (archive_step.c): the watermark
 * (stmt_history_id, stmt_last_sample_id, stmt_last_time of
 * pgsentinel_archive_state) is read FOR UPDATE and written in the same
 * statement as the rows.  It is a watermark of its own because the
 * statements worker writes a sample's readings some time after the
 * sampler wrote the sample; the readings are appended in the order of
 * their sample ids, so every reading after the watermark is one not
 * archived yet.
 *
 * A reading's deltas are taken from the statement's previous reading in
 * the ring, over the whole ring, as pg_stat_statements_history_deltas()
 * does: the archive holds exactly the rows the helper returns for those
 * readings, minus those in which no counter moved.
 *
 * Texts are read with pg_stat_statements(true), which reads the query-text
 * file: only when a statement of the step has no text yet for the day,
 * never by the sampler or the statements worker.  A text pg_stat_statements
 * no longer has is taken from the archive's latest day that has it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pgsentinel.h"

/*
 * The step.  %1$s is the extension's schema, quoted; %2$s the rows of
 * pg_stat_statements with their texts (queryid, dbid, userid, query).  $1
 * is the oldest time the retention keeps: older readings are passed over
 * (their partitions are gone).  Returns the readings seen, rows stored,
 * rows not stored because nothing moved, and texts copied.
 */
static const char *const stmt_step_sql =
"WITH st AS MATERIALIZED ("
"  SELECT s.stmt_history_id, s.stmt_last_sample_id, s.stmt_last_time"
"    FROM %1$s.pgsentinel_archive_state s FOR UPDATE),"
" hid AS MATERIALIZED (SELECT %1$s.pgsentinel_history_id() AS id),"
" ring AS MATERIALIZED ("
"  SELECT h.ash_time, h.sample_id, h.userid, h.dbid, h.queryid, h.toplevel,"
"         h.calls, h.rows, h.total_exec_time, h.plans, h.total_plan_time,"
"         h.shared_blks_hit, h.shared_blks_read, h.shared_blks_dirtied,"
"         h.shared_blks_written, h.temp_blks_read, h.temp_blks_written,"
"         h.wal_bytes,"
"         CASE WHEN st.stmt_history_id = hid.id"
"              THEN h.sample_id > st.stmt_last_sample_id"
"              ELSE h.ash_time > coalesce(st.stmt_last_time, '-infinity') END"
"           AS is_new"
"    FROM %1$s.pg_stat_statements_history() h, st, hid"
"   WHERE h.queryid IS NOT NULL),"
" fresh AS MATERIALIZED (SELECT * FROM ring r WHERE r.is_new),"
/* the readings of the statements read anew, with the one before each */
" readings AS MATERIALIZED ("
"  SELECT r.*,"
"         lag(r.ash_time) OVER w AS p_time, lag(r.calls) OVER w AS p_calls,"
"         lag(r.rows) OVER w AS p_rows,"
"         lag(r.total_exec_time) OVER w AS p_exec,"
"         lag(r.plans) OVER w AS p_plans,"
"         lag(r.total_plan_time) OVER w AS p_plan,"
"         lag(r.shared_blks_hit) OVER w AS p_hit,"
"         lag(r.shared_blks_read) OVER w AS p_read,"
"         lag(r.shared_blks_dirtied) OVER w AS p_dirtied,"
"         lag(r.shared_blks_written) OVER w AS p_written,"
"         lag(r.temp_blks_read) OVER w AS p_temp_read,"
"         lag(r.temp_blks_written) OVER w AS p_temp_written,"
"         lag(r.wal_bytes) OVER w AS p_wal_bytes"
"    FROM ring r"
"   WHERE (r.userid, r.dbid, r.queryid, r.toplevel) IN"
"         (SELECT f.userid, f.dbid, f.queryid, f.toplevel FROM fresh f)"
"  WINDOW w AS (PARTITION BY r.userid, r.dbid, r.queryid, r.toplevel"
"               ORDER BY r.ash_time, r.sample_id)),"
" deltas AS MATERIALIZED ("
"  SELECT r.*,"
"         (r.calls < r.p_calls OR r.rows < r.p_rows"
"          OR r.total_exec_time < r.p_exec OR r.plans < r.p_plans"
"          OR r.total_plan_time < r.p_plan"
"          OR r.shared_blks_hit < r.p_hit OR r.shared_blks_read < r.p_read"
"          OR r.shared_blks_dirtied < r.p_dirtied"
"          OR r.shared_blks_written < r.p_written"
"          OR r.temp_blks_read < r.p_temp_read"
"          OR r.temp_blks_written < r.p_temp_written"
"          OR r.wal_bytes < r.p_wal_bytes) AS was_reset,"
"         (r.calls, r.rows, r.total_exec_time, r.plans, r.total_plan_time,"
"          r.shared_blks_hit, r.shared_blks_read, r.shared_blks_dirtied,"
"          r.shared_blks_written, r.temp_blks_read, r.temp_blks_written,"
"          r.wal_bytes)"
"         IS NOT DISTINCT FROM"
"         (r.p_calls, r.p_rows, r.p_exec, r.p_plans, r.p_plan, r.p_hit,"
"          r.p_read, r.p_dirtied, r.p_written, r.p_temp_read,"
"          r.p_temp_written, r.p_wal_bytes) AS unchanged"
"    FROM readings r"
"   WHERE r.is_new AND r.p_time IS NOT NULL AND r.ash_time >= $1),"
" kept AS MATERIALIZED ("
"  SELECT * FROM deltas d WHERE d.was_reset OR NOT d.unchanged),"
" ins AS ("
"  INSERT INTO %1$s.pgsentinel_archive_stmt_delta (ash_time, prev_ash_time,"
"         sample_id, queryid, calls, rows, exec_ms, plans, plan_ms,"
"         shared_blks_hit, shared_blks_read, shared_blks_dirtied,"
"         shared_blks_written, temp_blks_read, temp_blks_written, wal_bytes,"
"         userid, dbid, toplevel, reset)"
"  SELECT k.ash_time, k.p_time, k.sample_id, k.queryid,"
"         nullif(k.calls - k.p_calls, 0), nullif(k.rows - k.p_rows, 0),"
"         nullif(k.total_exec_time - k.p_exec, 0),"
"         nullif(k.plans - k.p_plans, 0),"
"         nullif(k.total_plan_time - k.p_plan, 0),"
"         nullif(k.shared_blks_hit - k.p_hit, 0),"
"         nullif(k.shared_blks_read - k.p_read, 0),"
"         nullif(k.shared_blks_dirtied - k.p_dirtied, 0),"
"         nullif(k.shared_blks_written - k.p_written, 0),"
"         nullif(k.temp_blks_read - k.p_temp_read, 0),"
"         nullif(k.temp_blks_written - k.p_temp_written, 0),"
"         nullif(least(k.wal_bytes - k.p_wal_bytes, 9223372036854775807), 0)::int8,"
"         k.userid, k.dbid, k.toplevel, false"
"    FROM kept k WHERE NOT k.was_reset"
"  UNION ALL"
"  SELECT k.ash_time, k.p_time, k.sample_id, k.queryid, NULL, NULL, NULL,"
"         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
"         k.userid, k.dbid, k.toplevel, true"
"    FROM kept k WHERE k.was_reset"
"  RETURNING 1),"
/* the statements with no text yet for the day */
" missing AS MATERIALIZED ("
"  SELECT DISTINCT timezone('UTC', k.ash_time)::date AS day, k.queryid,"
"         k.dbid, k.userid"
"    FROM kept k"
"   WHERE NOT EXISTS (SELECT FROM %1$s.pgsentinel_archive_stmt_text m"
"                      WHERE m.day = timezone('UTC', k.ash_time)::date"
"                        AND m.queryid = k.queryid AND m.dbid = k.dbid"
"                        AND m.userid = k.userid)),"
/* the text file is read only when a text is missing */
" pgss AS MATERIALIZED ("
"  SELECT p.queryid, p.dbid, p.userid, p.query"
"    FROM %2$s p"
"   WHERE (SELECT count(*) FROM missing) > 0 AND p.query IS NOT NULL"
"     AND (p.queryid, p.dbid, p.userid) IN"
"         (SELECT m.queryid, m.dbid, m.userid FROM missing m)),"
" found AS MATERIALIZED ("
"  SELECT m.day, m.queryid, m.dbid, m.userid,"
"         coalesce((SELECT p.query FROM pgss p"
"                    WHERE p.queryid = m.queryid AND p.dbid = m.dbid"
"                      AND p.userid = m.userid LIMIT 1),"
"                  (SELECT t.text"
"                     FROM %1$s.pgsentinel_archive_stmt_text o"
"                     JOIN %1$s.pgsentinel_archive_text t"
"                       ON t.day = o.day AND t.text_id = o.text_id"
"                    WHERE o.queryid = m.queryid AND o.dbid = m.dbid"
"                      AND o.userid = m.userid"
"                    ORDER BY o.day DESC LIMIT 1)) AS text"
"    FROM missing m),"
" txt AS MATERIALIZED ("
"  SELECT DISTINCT f.day, f.text, hashtextextended(f.text, 0) AS hash"
"    FROM found f WHERE f.text IS NOT NULL),"
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
/* a statement without a text anywhere gets none for the day: looked for once */
" map AS ("
"  INSERT INTO %1$s.pgsentinel_archive_stmt_text (day, queryid, dbid,"
"         userid, text_id)"
"  SELECT f.day, f.queryid, f.dbid, f.userid, a.text_id"
"    FROM found f LEFT JOIN txt_all a ON a.day = f.day AND a.text = f.text"
"  RETURNING text_id),"
/* the watermark, with the counts */
" counts AS MATERIALIZED ("
"  SELECT (SELECT count(DISTINCT f.sample_id) FROM fresh f) AS readings,"
"         (SELECT count(*) FROM fresh f) AS seen,"
"         (SELECT count(*) FROM kept) AS kept,"
"         (SELECT count(*) FROM deltas d WHERE NOT d.was_reset"
"                                          AND d.unchanged) AS unchanged,"
"         (SELECT count(*) FROM map WHERE text_id IS NOT NULL) AS texts),"
" upd AS ("
"  UPDATE %1$s.pgsentinel_archive_state s"
"     SET stmt_history_id = hid.id,"
"         stmt_last_sample_id = (SELECT max(f.sample_id) FROM fresh f),"
"         stmt_last_time = (SELECT max(f.ash_time) FROM fresh f),"
"         stmt_readings_archived = s.stmt_readings_archived + c.readings,"
"         stmt_rows_archived = s.stmt_rows_archived + c.kept,"
"         stmt_rows_unchanged = s.stmt_rows_unchanged + c.unchanged"
"    FROM hid, counts c"
"   WHERE c.seen > 0"
"  RETURNING 1)"
"SELECT c.readings::int8, c.kept::int8, c.unchanged::int8, c.texts::int8"
"  FROM counts c";

/* pg_stat_statements' rows when it is not created here: none. */
static const char *const no_pgss =
"(SELECT NULL::int8 AS queryid, NULL::oid AS dbid, NULL::oid AS userid,"
"        NULL::text AS query WHERE false)";

/*
 * The function call that returns pg_stat_statements' rows with their texts,
 * schema-qualified, or a query returning none when it is not created in
 * this database.  Allocated in the current memory context.
 */
static char *
pgss_source(void)
{
	char	   *schema;

	if (SPI_execute("SELECT n.nspname"
					"  FROM pg_catalog.pg_extension e"
					"  JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace"
					"  JOIN pg_catalog.pg_proc p ON p.pronamespace = e.extnamespace"
					" WHERE e.extname = 'pg_stat_statements'"
					"   AND p.proname = 'pg_stat_statements' AND p.pronargs = 1",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up pg_stat_statements");
	if (SPI_processed == 0)
		return pstrdup(no_pgss);
	schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return psprintf("%s.pg_stat_statements(true)", quote_identifier(schema));
}

/*
 * Archive the readings of the statements ring after the statements'
 * watermark.  Same caller rules as pgs_archive_step(): a transaction, SPI
 * connected, search path pg_catalog, pg_temp; schema is quoted.  Fills
 * *result.
 */
void
pgs_archive_statements_step(const char *schema, TimestampTz oldest_kept,
							PgsArchiveStmtResult *result)
{
	StringInfoData sql;
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	Datum		args[1];
	bool		isnull;
	int			ret;
	HeapTuple	tup;
	TupleDesc	desc;
	char	   *source;

	/* read first: rows written meanwhile are left for the next step */
	result->ring_written = pgs_ring_written(&pgs_state->pgssh);
	source = pgss_source();
	initStringInfo(&sql);
	appendStringInfo(&sql, stmt_step_sql, schema, source);
	args[0] = TimestampTzGetDatum(oldest_kept);
	ret = SPI_execute_with_args(sql.data, 1, argtypes, args, NULL, false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pgsentinel statements archive step: unexpected result %d", ret);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	result->readings = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	result->rows = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
	result->rows_unchanged = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	result->texts = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	pfree(sql.data);
	pfree(source);
}

/*
 * The time of the oldest reading the statements ring holds, 0 if none:
 * the archive's partitions must reach back to it.
 */
TimestampTz
pgs_archive_statements_oldest(void)
{
	PgsQueryBounds bounds;
	PgsRingCursor cursor;
	const PgsshRow *r;
	TimestampTz t = 0;

	pgs_ring_query_bounds(&pgs_state->pgssh, CurrentMemoryContext, &bounds);
	pgs_ring_cursor_open(&cursor, &pgs_state->pgssh, bounds.first,
						 Min(bounds.first + 1, bounds.end));
	r = pgs_ring_cursor_next(&cursor);
	if (r != NULL)
		t = r->ash_time;
	pfree(cursor.chunk);
	return t;
}
