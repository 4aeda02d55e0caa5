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
#include "read/views.h"
#include "store/ash_rows.h"
#include "store/ring.h"

PG_FUNCTION_INFO_V1(pgsentinel_samples);
PG_FUNCTION_INFO_V1(pgsentinel_history_id);
PG_FUNCTION_INFO_V1(pgsentinel_ring_start);

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
 * first.  active_sessions is the rows of active sessions the sample wrote
 * to the ASH ring (some may have been overwritten since), not those of
 * the idle blockers it sampled too.
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
	pgs_ring_query_bounds(&pgs_state->sampler.samples,
						  rsinfo->econtext->ecxt_per_query_memory, &bounds);
	pgs_ring_cursor_open(&cursor, &pgs_state->sampler.samples, bounds.first,
						 bounds.end);
	while ((r = pgs_ring_cursor_next(&cursor)) != NULL)
	{
		Datum		values[SAMPLE_COLS];
		bool		nulls[SAMPLE_COLS] = {0};

		CHECK_FOR_INTERRUPTS();
		values[0] = Int64GetDatum(r->sample_id);
		values[1] = TimestampTzGetDatum(r->sample_time);
		values[2] = Float8GetDatum(r->period_us / 1000000.0);
		values[3] = Int32GetDatum(r->nactive);
		pgs_put_mapped(rsinfo->setResult, rsinfo->setDesc, map, values, nulls);
	}
	pfree(cursor.chunk);
	return (Datum) 0;
}

/*
 * SQL function pgsentinel_history_id(): the id of the history the rings
 * hold (sample/sampler.h), which the archive's watermark refers to.
 */
Datum
pgsentinel_history_id(PG_FUNCTION_ARGS)
{
	pgs_check_loaded();
	PG_RETURN_INT64((int64) pgs_state->sampler.history_id);
}

/*
 * SQL function pgsentinel_ring_start(): the time of the first sample whose
 * rows the ring holds whole, NULL when it holds no sample.  Once the ASH
 * ring has overwritten rows, its oldest row belongs to a sample that may
 * have lost some: the ring is whole from the sample after it.  Read within the
 * calling query's bounds (ring.c), so that the views that split the
 * history at this time read the rings as they were then.
 */
Datum
pgsentinel_ring_start(PG_FUNCTION_ARGS)
{
	MemoryContext query_cxt = fcinfo->flinfo->fn_mcxt;
	PgsQueryBounds ash;
	PgsQueryBounds samples;
	PgsRingCursor cursor;
	const AshRow *oldest_row;
	const PgsSampleRow *s;
	int64		after = 0;
	bool		found = false;
	TimestampTz start = 0;

	pgs_check_loaded();
	pgs_ring_query_bounds(&pgs_state->sampler.ash, query_cxt, &ash);
	pgs_ring_query_bounds(&pgs_state->sampler.samples, query_cxt, &samples);

	/* rows were overwritten only if the ring starts after its visible start */
	if (ash.first > pg_atomic_read_u64(&pgs_state->sampler.ash.visible_from))
	{
		pgs_ring_cursor_open(&cursor, &pgs_state->sampler.ash, ash.first,
							 Min(ash.first + 1, ash.end));
		oldest_row = pgs_ring_cursor_next(&cursor);
		if (oldest_row != NULL)
			after = oldest_row->sample_id;
		pfree(cursor.chunk);
	}

	pgs_ring_cursor_open(&cursor, &pgs_state->sampler.samples, samples.first,
						 samples.end);
	while ((s = pgs_ring_cursor_next(&cursor)) != NULL)
	{
		if (s->sample_id > after)
		{
			start = s->sample_time;
			found = true;
			break;
		}
	}
	pfree(cursor.chunk);
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(start);
}
