/*-------------------------------------------------------------------------
 *
 * pgssh_view.c
 *		pg_stat_statements_history(): the statements ring, read a chunk at
 *		a time without a lock, within bounds fixed once per query (ring.c),
 *		into the function's result (a tuplestore, which spills to disk
 *		beyond work_mem).
 *
 * Visibility is pg_stat_statements' (pg_stat_statements_internal()): every
 * row is shown, and its queryid only to a reader with the privileges of
 * pg_read_all_stats or who is the statement's user itself (the same role,
 * not a member of it).  The rows carry no session-level column.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "pgsentinel.h"
#include "read/views.h"
#include "statements/pgssh.h"
#include "store/ring.h"

PG_FUNCTION_INFO_V1(pg_stat_statements_history_2_0);
PG_FUNCTION_INFO_V1(pg_stat_statements_history);

/* Every column this file can produce, in 2.0's order. */
static const char *const pgssh_columns[] = {
	"ash_time", "userid", "dbid", "queryid", "calls", "total_exec_time",
	"rows", "shared_blks_hit", "shared_blks_read", "shared_blks_dirtied",
	"shared_blks_written", "local_blks_hit", "local_blks_read",
	"local_blks_dirtied", "local_blks_written", "temp_blks_read",
	"temp_blks_written", "blk_read_time", "blk_write_time", "plans",
	"total_plan_time", "wal_records", "wal_fpi", "wal_bytes", "sample_id",
	"toplevel", "total_time"
};

static const Oid pgssh_column_types[] = {
	TIMESTAMPTZOID, OIDOID, OIDOID, INT8OID, INT8OID, FLOAT8OID,
	INT8OID, INT8OID, INT8OID, INT8OID,
	INT8OID, INT8OID, INT8OID,
	INT8OID, INT8OID, INT8OID,
	INT8OID, FLOAT8OID, FLOAT8OID, INT8OID,
	FLOAT8OID, INT8OID, INT8OID, NUMERICOID, INT8OID,
	BOOLOID, FLOAT8OID
};

#define PGSSH_COLS lengthof(pgssh_columns)
StaticAssertDecl(lengthof(pgssh_columns) == lengthof(pgssh_column_types),
				 "one type per column");

/*
 * SQL function pg_stat_statements_history(): the statements ring, oldest
 * first, with the columns the SQL declaration asks for.
 */
static Datum
statements_history(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgsRingCursor cursor;
	const PgsshRow *r;
	PgsQueryBounds bounds;
	MemoryContext row_cxt;
	MemoryContext oldcxt;
	bool		read_all;
	Oid			userid = GetUserId();
	int			map[PGS_MAX_COLUMNS];

	pgs_check_loaded();
	InitMaterializedSRF(fcinfo, 0);
	pgs_map_columns(rsinfo->setDesc, pgssh_columns, pgssh_column_types, PGSSH_COLS, map);
	pgs_ring_query_bounds(&pgs_state->statements.ring,
						  rsinfo->econtext->ecxt_per_query_memory, &bounds);
	pgs_ring_cursor_open(&cursor, &pgs_state->statements.ring, bounds.first,
						 bounds.end);
	/* a row's datums are built here and freed once the row is stored */
	row_cxt = AllocSetContextCreate(CurrentMemoryContext,
									"pgsentinel statements row",
									ALLOCSET_SMALL_SIZES);
	read_all = has_privs_of_role(userid, ROLE_PG_READ_ALL_STATS);

	while ((r = pgs_ring_cursor_next(&cursor)) != NULL)
	{
		Datum		values[PGSSH_COLS];
		bool		nulls[PGSSH_COLS];
		int			c = 0;

		CHECK_FOR_INTERRUPTS();
		/* readings of samples up to a reset, written just after it */
		if (r->sample_id <= bounds.reset_sample_id)
			continue;
		oldcxt = MemoryContextSwitchTo(row_cxt);
		memset(nulls, 0, sizeof(nulls));
		values[c++] = TimestampTzGetDatum(r->ash_time);
		values[c++] = ObjectIdGetDatum(r->userid);
		values[c++] = ObjectIdGetDatum(r->dbid);
		values[c] = Int64GetDatum((int64) r->queryid);
		nulls[c++] = !(read_all || r->userid == userid);
		values[c++] = Int64GetDatum(r->calls);
		values[c++] = Float8GetDatum(r->total_exec_time);
		values[c++] = Int64GetDatum(r->rows);
		values[c++] = Int64GetDatum(r->shared_blks_hit);
		values[c++] = Int64GetDatum(r->shared_blks_read);
		values[c++] = Int64GetDatum(r->shared_blks_dirtied);
		values[c++] = Int64GetDatum(r->shared_blks_written);
		values[c++] = Int64GetDatum(r->local_blks_hit);
		values[c++] = Int64GetDatum(r->local_blks_read);
		values[c++] = Int64GetDatum(r->local_blks_dirtied);
		values[c++] = Int64GetDatum(r->local_blks_written);
		values[c++] = Int64GetDatum(r->temp_blks_read);
		values[c++] = Int64GetDatum(r->temp_blks_written);
		values[c++] = Float8GetDatum(r->blk_read_time);
		values[c++] = Float8GetDatum(r->blk_write_time);
		values[c++] = Int64GetDatum(r->plans);
		values[c++] = Float8GetDatum(r->total_plan_time);
		values[c++] = Int64GetDatum(r->wal_records);
		values[c++] = Int64GetDatum(r->wal_fpi);
		values[c++] = NumericGetDatum(int64_to_numeric(r->wal_bytes));
		values[c++] = Int64GetDatum(r->sample_id);
		values[c++] = BoolGetDatum(r->toplevel);
		values[c++] = Float8GetDatum(r->total_exec_time);
		Assert(c == PGSSH_COLS);
		MemoryContextSwitchTo(oldcxt);
		pgs_put_mapped(rsinfo->setResult, rsinfo->setDesc, map, values, nulls);
		MemoryContextReset(row_cxt);
	}
	pfree(cursor.chunk);
	MemoryContextDelete(row_cxt);
	if (cursor.lost > 0)
		ereport(NOTICE,
				(errmsg("%llu rows of the statements history were overwritten before this query read them",
						(unsigned long long) cursor.lost),
				 errdetail("The statements worker went around the ring of %d rows while the query ran; the query skipped those rows.",
						   (int) pgs_state->statements.ring.capacity),
				 errhint("Read the history in shorter queries, or raise pgsentinel_pgssh.max_entries.")));
	return (Datum) 0;
}

/* pg_stat_statements_history() as declared by pgsentinel 2.0. */
Datum
pg_stat_statements_history_2_0(PG_FUNCTION_ARGS)
{
	return statements_history(fcinfo);
}

/* The C name pgsentinel 1.4 and 1.5 declared: their columns, by name. */
Datum
pg_stat_statements_history(PG_FUNCTION_ARGS)
{
	return statements_history(fcinfo);
}
