/*-------------------------------------------------------------------------
 *
 * samples_view.c
 *		pgsentinel_samples(): the list of samples the ring holds, those
 *		without an active session included, each with the sampling period
 *		it was taken at.
 *
 * Average active sessions is the time sessions were active divided by the
 * time observed: each row of a sample stands for its period of one
 * session's time, and each sample observed its period, whether it found
 * sessions or not.  Counting only the samples that have rows overstates
 * the load of a quiet server.
 *
 * The list is read as the other rings are: a chunk at a time, without a
 * lock, within bounds fixed once per query (ring.c).  It carries nothing
 * any role may not see.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/timestamp.h"

#include "pgsentinel.h"

PG_FUNCTION_INFO_V1(pgsentinel_samples);

static const char *const sample_columns[] = {
	"sample_id", "sample_time", "sample_period", "active_sessions"
};

static const Oid sample_column_types[] = {
	INT8OID, TIMESTAMPTZOID, FLOAT8OID, INT4OID
};

#define SAMPLE_COLS lengthof(sample_columns)
StaticAssertDecl(lengthof(sample_columns) == lengthof(sample_column_types),
				 "one type per column");

/*
 * SQL function pgsentinel_samples(): every sample in the list, oldest
 * first.  active_sessions is the rows the sample wrote to the ASH ring
 * (some may have been overwritten since).
 */
Datum
pgsentinel_samples(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgsRingCursor cursor;
	const PgsSampleRow *r;
	PgsQueryBounds bounds;
	int			map[PGS_MAX_COLUMNS];

	pgs_check_loaded();
	InitMaterializedSRF(fcinfo, 0);
	pgs_map_columns(rsinfo->setDesc, sample_columns, sample_column_types,
					SAMPLE_COLS, map);
	pgs_ring_query_bounds(&pgs_state->samples,
						  rsinfo->econtext->ecxt_per_query_memory, &bounds);
	pgs_ring_cursor_open(&cursor, &pgs_state->samples, bounds.first,
						 bounds.end);
	while ((r = pgs_ring_cursor_next(&cursor)) != NULL)
	{
		Datum		values[SAMPLE_COLS];
		bool		nulls[SAMPLE_COLS] = {0};

		CHECK_FOR_INTERRUPTS();
		values[0] = Int64GetDatum(r->sample_id);
		values[1] = TimestampTzGetDatum(r->sample_time);
		values[2] = Float8GetDatum(r->period_us / 1000000.0);
		values[3] = Int32GetDatum(r->nrows);
		pgs_put_mapped(rsinfo->setResult, rsinfo->setDesc, map, values, nulls);
	}
	pfree(cursor.chunk);
	return (Datum) 0;
}
