/*-------------------------------------------------------------------------
 *
 * batch_rows.c
 *		pgsentinel_batch_rows(): the rows of one archive batch, read back.
 *
 * A batch (pgsentinel_archive_batch, sql-src 30_archive.sql) holds the
 * samples of one archiving step and day, and their rows, as one array per
 * column.  Every reader of the archive (its views, the fleet's) decodes a
 * batch through this function: each array is detoasted and split once,
 * then the rows are built in one pass, joined to their samples by index.
 *
 * The arrays are read as the archive's writer made them, and as anybody
 * who can write to a fleet's tables may make them: an element missing from
 * an array reads as NULL, a row whose sample index is NULL or points
 * outside the sample arrays is left out, and a time that overflows is an
 * error; nothing is trusted to be consistent.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "archive/archive.h"

PG_FUNCTION_INFO_V1(pgsentinel_batch_rows);

/* One argument array, split into its elements. */
typedef struct BatchColumn
{
	Datum	   *values;
	bool	   *nulls;
	int			n;
} BatchColumn;

/* The arguments after first_time, in the SQL declaration's order. */
enum
{
	ARG_SAMPLE_IDS = 1,
	ARG_SAMPLE_US,
	ARG_SAMPLE_PERIODS,
	ARG_WEIGHTS,
	ARG_SAMPLE_BLOCKED,
	ARG_ROW_SAMPLES,
	ARG_SESSION_IDS,
	ARG_WAIT_EVENT_IDS,
	ARG_STATES,
	ARG_XACT_US,
	ARG_QUERY_US,
	ARG_CHANGE_US,
	ARG_BACKEND_XIDS,
	ARG_BACKEND_XMINS,
	ARG_TOP_LEVEL_QUERY_IDS,
	ARG_TOP_LEVEL_QUERY_VALUES,
	ARG_QUERY_IDS,
	ARG_QUERY_VALUES,
	ARG_CMDTYPES,
	ARG_QUERYIDS,
	ARG_NESTED_QUERYIDS,
	ARG_BLOCKERS,
	ARG_BLOCKERPIDS,
	ARG_BLOCKER_STATES,
	ARG_BLOCKER_USESYSIDS,
	ARG_BLOCKING_PIDS,
	NUM_ARGS
};

/*
 * The element type of each argument array; the integer row columns are
 * packed (packed_ints.c) and read back as int64, then as this type.
 */
static const Oid arg_types[NUM_ARGS] = {
	[ARG_SAMPLE_IDS] = INT8OID,
	[ARG_SAMPLE_US] = INT8OID,
	[ARG_SAMPLE_PERIODS] = FLOAT8OID,
	[ARG_WEIGHTS] = FLOAT8OID,
	[ARG_SAMPLE_BLOCKED] = BOOLOID,
	[ARG_ROW_SAMPLES] = INT4OID,
	[ARG_SESSION_IDS] = INT4OID,
	[ARG_WAIT_EVENT_IDS] = INT4OID,
	[ARG_STATES] = TEXTOID,
	[ARG_XACT_US] = INT8OID,
	[ARG_QUERY_US] = INT8OID,
	[ARG_CHANGE_US] = INT8OID,
	[ARG_BACKEND_XIDS] = XIDOID,
	[ARG_BACKEND_XMINS] = XIDOID,
	[ARG_TOP_LEVEL_QUERY_IDS] = INT4OID,
	[ARG_TOP_LEVEL_QUERY_VALUES] = TEXTOID,
	[ARG_QUERY_IDS] = INT4OID,
	[ARG_QUERY_VALUES] = TEXTOID,
	[ARG_CMDTYPES] = TEXTOID,
	[ARG_QUERYIDS] = INT8OID,
	[ARG_NESTED_QUERYIDS] = INT8OID,
	[ARG_BLOCKERS] = INT4OID,
	[ARG_BLOCKERPIDS] = INT4OID,
	[ARG_BLOCKER_STATES] = TEXTOID,
	[ARG_BLOCKER_USESYSIDS] = OIDOID,
	[ARG_BLOCKING_PIDS] = TEXTOID,
};

/* The result's columns. */
enum
{
	COL_SAMPLE_TIME,
	COL_SAMPLE_ID,
	COL_SAMPLE_PERIOD,
	COL_SWEIGHT,
	COL_BLOCKED_SAMPLE,
	COL_SESSION_ID,
	COL_WAIT_EVENT_ID,
	COL_STATE,
	COL_XACT_START,
	COL_QUERY_START,
	COL_STATE_CHANGE,
	COL_BACKEND_XID,
	COL_BACKEND_XMIN,
	COL_TOP_LEVEL_QUERY_ID,
	COL_TOP_LEVEL_QUERY_VALUES,
	COL_QUERY_ID,
	COL_QUERY_VALUES,
	COL_CMDTYPE,
	COL_QUERYID,
	COL_NESTED_QUERYID,
	COL_BLOCKERS,
	COL_BLOCKERPID,
	COL_BLOCKER_STATE,
	COL_BLOCKER_USESYSID,
	COL_BLOCKING_PIDS,
	NUM_COLS
};

/* The type of each result column. */
static const Oid col_types[NUM_COLS] = {
	[COL_SAMPLE_TIME] = TIMESTAMPTZOID,
	[COL_SAMPLE_ID] = INT8OID,
	[COL_SAMPLE_PERIOD] = FLOAT8OID,
	[COL_SWEIGHT] = FLOAT8OID,
	[COL_BLOCKED_SAMPLE] = BOOLOID,
	[COL_SESSION_ID] = INT4OID,
	[COL_WAIT_EVENT_ID] = INT4OID,
	[COL_STATE] = TEXTOID,
	[COL_XACT_START] = TIMESTAMPTZOID,
	[COL_QUERY_START] = TIMESTAMPTZOID,
	[COL_STATE_CHANGE] = TIMESTAMPTZOID,
	[COL_BACKEND_XID] = XIDOID,
	[COL_BACKEND_XMIN] = XIDOID,
	[COL_TOP_LEVEL_QUERY_ID] = INT4OID,
	[COL_TOP_LEVEL_QUERY_VALUES] = TEXTOID,
	[COL_QUERY_ID] = INT4OID,
	[COL_QUERY_VALUES] = TEXTOID,
	[COL_CMDTYPE] = TEXTOID,
	[COL_QUERYID] = INT8OID,
	[COL_NESTED_QUERYID] = INT8OID,
	[COL_BLOCKERS] = INT4OID,
	[COL_BLOCKERPID] = INT4OID,
	[COL_BLOCKER_STATE] = TEXTOID,
	[COL_BLOCKER_USESYSID] = OIDOID,
	[COL_BLOCKING_PIDS] = TEXTOID,
};

/* Whether an argument is a packed integer array (bytea). */
static inline bool
packed_arg(int arg)
{
	switch (arg)
	{
		case ARG_ROW_SAMPLES:
		case ARG_SESSION_IDS:
		case ARG_WAIT_EVENT_IDS:
		case ARG_XACT_US:
		case ARG_QUERY_US:
		case ARG_CHANGE_US:
		case ARG_BACKEND_XIDS:
		case ARG_BACKEND_XMINS:
		case ARG_TOP_LEVEL_QUERY_IDS:
		case ARG_QUERY_IDS:
		case ARG_BLOCKERS:
		case ARG_BLOCKERPIDS:
			return true;
		default:
			return false;
	}
}

/* A packed column's elements, as Datums of its element type. */
static void
unpack_column(FunctionCallInfo fcinfo, int arg, BatchColumn *col)
{
	int64	   *v;
	bool	   *nulls;

	col->n = pgs_unpack_ints(PG_GETARG_BYTEA_PP(arg), &v, &nulls);
	col->values = palloc(Max(col->n, 1) * sizeof(Datum));
	col->nulls = nulls ? nulls : palloc0(Max(col->n, 1) * sizeof(bool));
	for (int i = 0; i < col->n; i++)
	{
		if (col->nulls[i])
			continue;
		switch (arg_types[arg])
		{
			case INT8OID:
				col->values[i] = Int64GetDatum(v[i]);
				break;
			case INT4OID:
				if (v[i] < PG_INT32_MIN || v[i] > PG_INT32_MAX)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("archive batch column %d holds %lld, out of range for integer",
									arg + 1, (long long) v[i])));
				col->values[i] = Int32GetDatum((int32) v[i]);
				break;
			default:			/* XIDOID */
				if (v[i] < 0 || v[i] > PG_UINT32_MAX)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("archive batch column %d holds %lld, out of range for xid",
									arg + 1, (long long) v[i])));
				col->values[i] = TransactionIdGetDatum((TransactionId) v[i]);
				break;
		}
	}
	pfree(v);
}

static void
split_column(FunctionCallInfo fcinfo, int arg, BatchColumn *col)
{
	ArrayType  *a;
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;

	col->values = NULL;
	col->nulls = NULL;
	col->n = 0;
	if (PG_ARGISNULL(arg))
		return;
	if (packed_arg(arg))
	{
		unpack_column(fcinfo, arg, col);
		return;
	}
	a = PG_GETARG_ARRAYTYPE_P(arg);
	if (ARR_ELEMTYPE(a) != arg_types[arg])
		elog(ERROR, "pgsentinel_batch_rows: argument %d is not of the declared type", arg + 1);
	get_typlenbyvalalign(arg_types[arg], &elmlen, &elmbyval, &elmalign);
	deconstruct_array(a, arg_types[arg], elmlen, elmbyval, elmalign,
					  &col->values, &col->nulls, &col->n);
}

/* Element i of a column, or NULL (false) past its end. */
static inline bool
element(const BatchColumn *col, int i, Datum *value)
{
	if (i < 0 || i >= col->n || col->nulls[i])
		return false;
	*value = col->values[i];
	return true;
}

/* Copy element i of a column into column c of the result. */
static inline void
put(const BatchColumn *col, int i, Datum *values, bool *nulls, int c)
{
	nulls[c] = !element(col, i, &values[c]);
}

/*
 * SQL function pgsentinel_batch_rows(first_time, the batch's arrays...):
 * one row per element of the row arrays whose sample index names a sample
 * of the sample arrays, in the rows' order, with the sample's time, id,
 * period, weight (sweight) and blocked flag, and the row's times read back
 * (35_history_views.sql declares it).
 */
Datum
pgsentinel_batch_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BatchColumn cols[NUM_ARGS];
	bool		have_first = !PG_ARGISNULL(0);
	TimestampTz first = have_first ? PG_GETARG_TIMESTAMPTZ(0) : 0;
	int			nrows = 0;
	int			nsamples = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != NUM_COLS)
		elog(ERROR, "pgsentinel_batch_rows: the declared result has %d columns, not %d",
			 rsinfo->setDesc->natts, NUM_COLS);
	for (int c = 0; c < NUM_COLS; c++)
		if (TupleDescAttr(rsinfo->setDesc, c)->atttypid != col_types[c])
			elog(ERROR, "pgsentinel_batch_rows: result column %d is not of the expected type",
				 c + 1);

	for (int a = ARG_SAMPLE_IDS; a < NUM_ARGS; a++)
	{
		split_column(fcinfo, a, &cols[a]);
		if (a < ARG_ROW_SAMPLES)
			nsamples = Max(nsamples, cols[a].n);
		else
			nrows = Max(nrows, cols[a].n);
	}

	for (int j = 0; j < nrows; j++)
	{
		Datum		values[NUM_COLS];
		bool		nulls[NUM_COLS];
		Datum		d;
		int			si;
		bool		have_xact = false;
		bool		have_query = false;
		TimestampTz xact = 0;
		TimestampTz query = 0;
		TimestampTz base;

		CHECK_FOR_INTERRUPTS();
		if (!element(&cols[ARG_ROW_SAMPLES], j, &d))
			continue;
		/* 1-based in the batch */
		if (DatumGetInt32(d) < 1 || DatumGetInt32(d) > nsamples)
			continue;
		si = DatumGetInt32(d) - 1;

		memset(nulls, 0, sizeof(nulls));
		/* the sample */
		if (have_first && element(&cols[ARG_SAMPLE_US], si, &d))
			values[COL_SAMPLE_TIME] = TimestampTzGetDatum(pgs_us_after(first, DatumGetInt64(d)));
		else
			nulls[COL_SAMPLE_TIME] = true;
		put(&cols[ARG_SAMPLE_IDS], si, values, nulls, COL_SAMPLE_ID);
		put(&cols[ARG_SAMPLE_PERIODS], si, values, nulls, COL_SAMPLE_PERIOD);
		put(&cols[ARG_WEIGHTS], si, values, nulls, COL_SWEIGHT);
		put(&cols[ARG_SAMPLE_BLOCKED], si, values, nulls, COL_BLOCKED_SAMPLE);

		/* the row's times, chained as the writer stored them */
		if (have_first && element(&cols[ARG_XACT_US], j, &d))
		{
			xact = pgs_us_after(first, DatumGetInt64(d));
			have_xact = true;
		}
		base = have_xact ? xact : first;
		if (have_first && element(&cols[ARG_QUERY_US], j, &d))
		{
			query = pgs_us_after(base, DatumGetInt64(d));
			have_query = true;
		}
		nulls[COL_XACT_START] = !have_xact;
		values[COL_XACT_START] = TimestampTzGetDatum(xact);
		nulls[COL_QUERY_START] = !have_query;
		values[COL_QUERY_START] = TimestampTzGetDatum(query);
		base = have_query ? query : base;
		if (have_first && element(&cols[ARG_CHANGE_US], j, &d))
			values[COL_STATE_CHANGE] = TimestampTzGetDatum(pgs_us_after(base, DatumGetInt64(d)));
		else
			nulls[COL_STATE_CHANGE] = true;

		/* the rest as stored */
		put(&cols[ARG_SESSION_IDS], j, values, nulls, COL_SESSION_ID);
		put(&cols[ARG_WAIT_EVENT_IDS], j, values, nulls, COL_WAIT_EVENT_ID);
		put(&cols[ARG_STATES], j, values, nulls, COL_STATE);
		put(&cols[ARG_BACKEND_XIDS], j, values, nulls, COL_BACKEND_XID);
		put(&cols[ARG_BACKEND_XMINS], j, values, nulls, COL_BACKEND_XMIN);
		put(&cols[ARG_TOP_LEVEL_QUERY_IDS], j, values, nulls, COL_TOP_LEVEL_QUERY_ID);
		put(&cols[ARG_TOP_LEVEL_QUERY_VALUES], j, values, nulls, COL_TOP_LEVEL_QUERY_VALUES);
		put(&cols[ARG_QUERY_IDS], j, values, nulls, COL_QUERY_ID);
		put(&cols[ARG_QUERY_VALUES], j, values, nulls, COL_QUERY_VALUES);
		/* query id 0: the statement is the top-level one (30_archive.sql) */
		if (!nulls[COL_QUERY_ID] && DatumGetInt32(values[COL_QUERY_ID]) == 0)
		{
			values[COL_QUERY_ID] = values[COL_TOP_LEVEL_QUERY_ID];
			nulls[COL_QUERY_ID] = nulls[COL_TOP_LEVEL_QUERY_ID];
			values[COL_QUERY_VALUES] = values[COL_TOP_LEVEL_QUERY_VALUES];
			nulls[COL_QUERY_VALUES] = nulls[COL_TOP_LEVEL_QUERY_VALUES];
		}
		put(&cols[ARG_CMDTYPES], j, values, nulls, COL_CMDTYPE);
		put(&cols[ARG_QUERYIDS], j, values, nulls, COL_QUERYID);
		put(&cols[ARG_NESTED_QUERYIDS], j, values, nulls, COL_NESTED_QUERYID);
		put(&cols[ARG_BLOCKERS], j, values, nulls, COL_BLOCKERS);
		put(&cols[ARG_BLOCKERPIDS], j, values, nulls, COL_BLOCKERPID);
		put(&cols[ARG_BLOCKER_STATES], j, values, nulls, COL_BLOCKER_STATE);
		put(&cols[ARG_BLOCKER_USESYSIDS], j, values, nulls, COL_BLOCKER_USESYSID);
		put(&cols[ARG_BLOCKING_PIDS], j, values, nulls, COL_BLOCKING_PIDS);

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
