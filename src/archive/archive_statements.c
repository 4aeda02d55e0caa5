/*-------------------------------------------------------------------------
 *
 * archive_statements.c
 *		The statements history in the archive, through SPI: one statement
 *		(pgsentinel_archive_statements_step_sql(), in
 *		sql-src/archive/32_archive_statements.sql, which says what it
 *		does and why it is exactly once) archives the readings of the
 *		statements ring after the statements' watermark as per-interval
 *		deltas, with the texts of the statements not archived yet that day,
 *		and moves the watermark.  This file finds pg_stat_statements and
 *		runs it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "archive/archive.h"
#include "db_worker.h"
#include "pgsentinel.h"
#include "statements/pgssh.h"
#include "store/ring.h"

/* pg_stat_statements' rows when it is not created here: none. */
static const char *const no_pgss =
"(SELECT NULL::int8 AS queryid, NULL::oid AS dbid, NULL::oid AS userid,"
"        NULL::text AS query WHERE false)";

/*
 * The function call that returns pg_stat_statements' rows with their texts,
 * schema-qualified, or a query returning none when it is not created in
 * this database.  pg_stat_statements is locked to the end of the
 * transaction (pgs_db_work_extension()).  Allocated in the current memory
 * context.
 */
static char *
pgss_source(void)
{
	Oid			showtext[1] = {BOOLOID};
	Oid			extoid;
	Oid			nspid = pgs_db_work_extension("pg_stat_statements", &extoid);

	if (!OidIsValid(nspid) ||
		!SearchSysCacheExists3(PROCNAMEARGSNSP,
							   CStringGetDatum("pg_stat_statements"),
							   PointerGetDatum(buildoidvector(showtext, 1)),
							   ObjectIdGetDatum(nspid)))
		return pstrdup(no_pgss);
	return psprintf("%s.pg_stat_statements(true)",
					quote_identifier(get_namespace_name(nspid)));
}

/*
 * Archive the readings of the statements ring after the statements'
 * watermark.  Same caller rules as pgs_archive_step(): a transaction, SPI
 * connected, search path pg_catalog, pg_temp; schema is the name, not
 * quoted.  Fills
 * *result.
 */
void
pgs_archive_statements_step(const char *schema, TimestampTz oldest_kept,
							PgsArchiveStatementsResult *result)
{
	static PgsArchivePlan step_plan;
	char	   *sql;
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	Datum		args[1];
	bool		isnull;
	int			ret;
	HeapTuple	tup;
	TupleDesc	desc;
	char	   *source;

	/* read first: rows written meanwhile are left for the next step */
	result->ring_written = pgs_ring_written(&pgs_state->statements.ring);
	source = pgss_source();
	sql = pgs_archive_template(schema, "pgsentinel_archive_statements_step_sql",
							   source);
	args[0] = TimestampTzGetDatum(oldest_kept);
	ret = pgs_archive_execute(&step_plan, sql, 1, argtypes, args);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pgsentinel statements archive step: unexpected result %d", ret);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	result->readings = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	result->rows = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
	result->rows_unchanged = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	result->texts = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	pfree(sql);
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

	pgs_ring_query_bounds(&pgs_state->statements.ring, CurrentMemoryContext,
						  &bounds);
	pgs_ring_cursor_open(&cursor, &pgs_state->statements.ring, bounds.first,
						 Min(bounds.first + 1, bounds.end));
	r = pgs_ring_cursor_next(&cursor);
	if (r != NULL)
		t = r->ash_time;
	pfree(cursor.chunk);
	return t;
}
