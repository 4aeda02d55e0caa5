/*-------------------------------------------------------------------------
 *
 * batch_rows.c
 *		pgsentinel_batch_rows(): the rows of one archive batch, read back.
 *
 * A batch (pgsentinel_archive_batch, sql-src/archive/30_archive.sql) holds the
 * samples of one archiving step and day as one payload, which its readers
 * expand into one array per column (batch_samples.c) and hand in here, and
 * their rows as another (batch_format.c).  Every reader of the archive (its
 * views, the fleet's) decodes a batch through this function: the payload
 * is expanded once and its columns read in place, the rows built in one
 * pass, joined to their samples by index.
 *
 * The arrays and the payload are read as the archive's writer made them,
 * and as anybody who can write to a fleet's tables may make them: an
 * element missing from a column reads as NULL, a row whose sample index is
 * NULL or points outside the sample arrays is left out, and a time that
 * overflows is an error; nothing is trusted to be consistent.  What is
 * allocated does not grow with the elements a column claims, and a column
 * longer than a batch can be is an error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "archive/archive.h"
#include "guc.h"

PG_FUNCTION_INFO_V1(pgsentinel_batch_rows);

/*
 * One column of the batch.  A sample column (an argument array) is read at
 * any index, in place: its elements are of fixed length, and rank says,
 * when it has NULLs, how many elements before each group of 8 are not
 * NULL.  A row column (of the payload) is read in order, one element a
 * row, by a reader that copies nothing.  What is allocated grows with the
 * arguments' bytes, not with the elements they claim.
 */
typedef struct BatchColumn
{
	int			n;				/* elements */
	PgsBatchColumnKind kind;	/* of a row column */
	PgsPackedReader packed;		/* a packed row column (packed_ints.c) */
	PgsTextsReader texts;		/* a texts row column (batch_format.c) */
	const char *data;			/* a sample column's elements */
	const bits8 *nullmap;		/* and its NULL bitmap, or NULL */
	int32	   *rank;
	int16		typlen;
	bool		typbyval;
} BatchColumn;

/* The sample arguments after first_time, in the SQL declaration's order. */
enum
{
	ARG_SAMPLE_IDS = 1,
	ARG_SAMPLE_US,
	ARG_SAMPLE_PERIODS,
	ARG_WEIGHTS,
	ARG_SAMPLE_BLOCKED,
	ARG_ROW_DATA,
	NUM_ARGS
};

/* The element type of each sample argument. */
static const Oid arg_types[NUM_ARGS] = {
	[ARG_SAMPLE_IDS] = INT8OID,
	[ARG_SAMPLE_US] = INT8OID,
	[ARG_SAMPLE_PERIODS] = FLOAT8OID,
	[ARG_WEIGHTS] = FLOAT8OID,
	[ARG_SAMPLE_BLOCKED] = BOOLOID,
};

/*
 * The row columns of the payload and the result's columns are
 * src/columns.txt's [row_data] and [batch_row] (PGS_ROW_DATA_* and
 * PGS_BATCH_ROW_*).  The integer row columns are packed (packed_ints.c) and
 * read back as int64, then as their element type.
 */
#define NUM_ROW_COLUMNS PGS_ROW_DATA_COLS
#define NUM_COLS PGS_BATCH_ROW_COLS
static const Oid row_types[NUM_ROW_COLUMNS] = {PGS_ROW_DATA_ELEMENT_TYPES};
static const Oid col_types[NUM_COLS] = {PGS_BATCH_ROW_COLUMN_TYPES};

/*
 * Refuse an array with more elements than a batch has rows at most (the
 * rows of one ring): no batch of the archive is like it.
 */
static void
check_count(int arg, int64 count)
{
	if (count > PGS_RING_MAX_ENTRIES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("archive batch column %d has %lld elements, more than an archive batch can have (%d)",
						arg + 1, (long long) count, PGS_RING_MAX_ENTRIES),
				 errhint("A batch holds at most the rows of one ring (pgsentinel_ash.max_entries and pgsentinel_pgssh.max_entries are at most %d): these arrays do not come from the archive.",
						 PGS_RING_MAX_ENTRIES)));
}

/* Prepare a sample argument to be read (see BatchColumn). */
static void
open_sample_column(FunctionCallInfo fcinfo, int arg, BatchColumn *col)
{
	ArrayType  *a;
	char		typalign;

	memset(col, 0, sizeof(*col));
	if (PG_ARGISNULL(arg))
		return;
	a = PG_GETARG_ARRAYTYPE_P(arg);
	if (ARR_ELEMTYPE(a) != arg_types[arg])
		elog(ERROR, "pgsentinel_batch_rows: argument %d is not of the declared type", arg + 1);
	check_count(arg, ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)));
	col->n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	/* bigint, double precision or boolean */
	get_typlenbyvalalign(arg_types[arg], &col->typlen, &col->typbyval, &typalign);
	Assert(col->typlen > 0);
	col->data = ARR_DATA_PTR(a);
	col->nullmap = ARR_NULLBITMAP(a);
	if (col->nullmap != NULL)
	{
		int32		before = 0;

		col->rank = palloc((col->n / 8 + 1) * sizeof(int32));
		for (int g = 0; g <= col->n / 8; g++)
		{
			col->rank[g] = before;
			if (g < (col->n + 7) / 8)
				before += pg_number_of_ones[col->nullmap[g]];
		}
	}
}

/* Prepare a row column of the payload to be read (see BatchColumn). */
static void
open_row_column(const PgsBatchColumnBytes *bytes, BatchColumn *col)
{
	memset(col, 0, sizeof(*col));
	col->kind = bytes->kind;
	if (col->kind == PGS_BATCH_PACKED)
		col->n = pgs_packed_begin_bytes(&col->packed, bytes->data, bytes->len);
	else if (col->kind == PGS_BATCH_TEXTS)
		col->n = pgs_texts_begin(&col->texts, bytes);
}

/* Element i of a sample column, or NULL (false) past its end. */
static bool
sample_element(const BatchColumn *col, int i, Datum *value)
{
	int			k = i;

	if (i < 0 || i >= col->n)
		return false;
	if (col->nullmap != NULL)
	{
		if ((col->nullmap[i / 8] & (1 << (i % 8))) == 0)
			return false;
		k = col->rank[i / 8] +
			pg_number_of_ones[col->nullmap[i / 8] & ((1 << (i % 8)) - 1)];
	}
	*value = fetch_att(col->data + (Size) k * col->typlen, col->typbyval,
					   col->typlen);
	return true;
}

/*
 * The next element of a row column, as a Datum of its element type, or
 * NULL (false) past its end.
 */
static bool
row_element(int c, BatchColumn *col, Datum *value)
{
	int64		v;

	if (col->kind == PGS_BATCH_TEXTS)
		return pgs_texts_next(&col->texts, value);
	if (col->kind != PGS_BATCH_PACKED || !pgs_packed_next(&col->packed, &v))
		return false;
	switch (row_types[c])
	{
		case INT8OID:
			*value = Int64GetDatum(v);
			break;
		case INT4OID:
			/* a row whose sample index no sample has is left out */
			if (c == PGS_ROW_DATA_ROW_SAMPLES && (v < 1 || v > PG_INT32_MAX))
				return false;
			if (v < PG_INT32_MIN || v > PG_INT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("archive batch row column %d holds %lld, out of range for integer",
								c + 1, (long long) v)));
			*value = Int32GetDatum((int32) v);
			break;
		default:				/* XIDOID, OIDOID */
			if (v < 0 || v > PG_UINT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("archive batch row column %d holds %lld, out of range for %s",
								c + 1, (long long) v,
								row_types[c] == XIDOID ? "xid" : "oid")));
			*value = ObjectIdGetDatum((Oid) v);
			break;
	}
	return true;
}

/* The elements of the row being built, one per row column. */
typedef struct RowElements
{
	Datum		value[NUM_ROW_COLUMNS];
	bool		have[NUM_ROW_COLUMNS];
} RowElements;

/* Element arg of the row, or NULL (false). */
static inline bool
got(const RowElements *row, int arg, Datum *value)
{
	if (!row->have[arg])
		return false;
	*value = row->value[arg];
	return true;
}

/* Copy element arg of the row into column c of the result. */
static inline void
put(const RowElements *row, int arg, Datum *values, bool *nulls, int c)
{
	nulls[c] = !got(row, arg, &values[c]);
}

/* Copy element i of a sample column into column c of the result. */
static inline void
put_sample(const BatchColumn *col, int i, Datum *values, bool *nulls, int c)
{
	nulls[c] = !sample_element(col, i, &values[c]);
}

/*
 * A column of the result, and the copies of a row column or a sample
 * column into one, by their names in src/columns.txt.
 */
#define VALUE(c)	values[PGS_BATCH_ROW_##c]
#define ISNULL(c)	nulls[PGS_BATCH_ROW_##c]
#define GOT(r, d)	got(&row, PGS_ROW_DATA_##r, d)
#define PUT(r, c)	put(&row, PGS_ROW_DATA_##r, values, nulls, PGS_BATCH_ROW_##c)
#define PUT_SAMPLE(arg, c) \
	put_sample(&cols[arg], si, values, nulls, PGS_BATCH_ROW_##c)

/*
 * SQL function pgsentinel_batch_rows(first_time, the sample arrays,
 * row_data): one row per row of the payload whose sample index names a sample
 * of the sample arrays, in the rows' order, with the sample's time, id,
 * period, weight (sweight) and blocked flag, and the row's times read back
 * (35_history_views.sql declares it).
 */
Datum
pgsentinel_batch_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BatchColumn cols[ARG_ROW_DATA];
	BatchColumn rcols[NUM_ROW_COLUMNS];
	bool		have_first = !PG_ARGISNULL(0);
	TimestampTz first = have_first ? PG_GETARG_TIMESTAMPTZ(0) : 0;
	int			nrows = 0;
	int			nsamples = 0;
	MemoryContext row_context;
	MemoryContext old_context;

	memset(rcols, 0, sizeof(rcols));
	InitMaterializedSRF(fcinfo, 0);
	/* a row's texts are freed once it is stored (or left out) */
	row_context = AllocSetContextCreate(CurrentMemoryContext,
										"pgsentinel_batch_rows row",
										ALLOCSET_SMALL_SIZES);
	if (rsinfo->setDesc->natts != NUM_COLS)
		elog(ERROR, "pgsentinel_batch_rows: the declared result has %d columns, not %d",
			 rsinfo->setDesc->natts, NUM_COLS);
	for (int c = 0; c < NUM_COLS; c++)
		if (TupleDescAttr(rsinfo->setDesc, c)->atttypid != col_types[c])
			elog(ERROR, "pgsentinel_batch_rows: result column %d is not of the expected type",
				 c + 1);

	for (int a = ARG_SAMPLE_IDS; a < ARG_ROW_DATA; a++)
	{
		open_sample_column(fcinfo, a, &cols[a]);
		nsamples = Max(nsamples, cols[a].n);
	}
	if (!PG_ARGISNULL(ARG_ROW_DATA))
	{
		PgsBatchColumnBytes bytes[NUM_ROW_COLUMNS];

		pgs_batch_open(PG_GETARG_BYTEA_PP(ARG_ROW_DATA), &pgs_rows_layout, bytes);
		for (int c = 0; c < NUM_ROW_COLUMNS; c++)
		{
			open_row_column(&bytes[c], &rcols[c]);
			check_count(ARG_ROW_DATA, rcols[c].n);
			nrows = Max(nrows, rcols[c].n);
		}
	}

	for (int j = 0; j < nrows; j++)
	{
		Datum		values[NUM_COLS];
		bool		nulls[NUM_COLS];
		RowElements row;
		Datum		d;
		int			si;
		bool		have_xact = false;
		bool		have_query = false;
		TimestampTz xact = 0;
		TimestampTz query = 0;
		TimestampTz base;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(row_context);
		old_context = MemoryContextSwitchTo(row_context);
		for (int c = 0; c < NUM_ROW_COLUMNS; c++)
			row.have[c] = j < rcols[c].n && row_element(c, &rcols[c], &row.value[c]);
		MemoryContextSwitchTo(old_context);
		if (!GOT(ROW_SAMPLES, &d))
			continue;
		/* 1-based in the batch */
		if (DatumGetInt32(d) < 1 || DatumGetInt32(d) > nsamples)
			continue;
		si = DatumGetInt32(d) - 1;

		memset(nulls, 0, sizeof(nulls));
		/* the sample */
		if (have_first && sample_element(&cols[ARG_SAMPLE_US], si, &d))
			VALUE(SAMPLE_TIME) = TimestampTzGetDatum(pgs_us_after(first, DatumGetInt64(d)));
		else
			ISNULL(SAMPLE_TIME) = true;
		PUT_SAMPLE(ARG_SAMPLE_IDS, SAMPLE_ID);
		PUT_SAMPLE(ARG_SAMPLE_PERIODS, SAMPLE_PERIOD);
		PUT_SAMPLE(ARG_WEIGHTS, SWEIGHT);
		PUT_SAMPLE(ARG_SAMPLE_BLOCKED, BLOCKED_SAMPLE);

		/* the row's times, chained as the writer stored them */
		if (have_first && GOT(XACT_US, &d))
		{
			xact = pgs_us_after(first, DatumGetInt64(d));
			have_xact = true;
		}
		base = have_xact ? xact : first;
		if (have_first && GOT(QUERY_US, &d))
		{
			query = pgs_us_after(base, DatumGetInt64(d));
			have_query = true;
		}
		ISNULL(XACT_START) = !have_xact;
		VALUE(XACT_START) = TimestampTzGetDatum(xact);
		ISNULL(QUERY_START) = !have_query;
		VALUE(QUERY_START) = TimestampTzGetDatum(query);
		base = have_query ? query : base;
		if (have_first && GOT(CHANGE_US, &d))
			VALUE(STATE_CHANGE) = TimestampTzGetDatum(pgs_us_after(base, DatumGetInt64(d)));
		else
			ISNULL(STATE_CHANGE) = true;

		/* the rest as stored */
		PUT(SESSION_IDS, SESSION_ID);
		PUT(WAIT_EVENT_IDS, WAIT_EVENT_ID);
		PUT(STATES, STATE);
		PUT(BACKEND_XIDS, BACKEND_XID);
		PUT(BACKEND_XMINS, BACKEND_XMIN);
		PUT(TOP_LEVEL_QUERY_IDS, TOP_LEVEL_QUERY_ID);
		PUT(TOP_LEVEL_QUERY_VALUES, TOP_LEVEL_QUERY_VALUES);
		PUT(QUERY_IDS, QUERY_ID);
		PUT(QUERY_VALUES, QUERY_VALUES);
		/* query id 0: the statement is the top-level one (30_archive.sql) */
		if (!ISNULL(QUERY_ID) && DatumGetInt32(VALUE(QUERY_ID)) == 0)
		{
			VALUE(QUERY_ID) = VALUE(TOP_LEVEL_QUERY_ID);
			ISNULL(QUERY_ID) = ISNULL(TOP_LEVEL_QUERY_ID);
			VALUE(QUERY_VALUES) = VALUE(TOP_LEVEL_QUERY_VALUES);
			ISNULL(QUERY_VALUES) = ISNULL(TOP_LEVEL_QUERY_VALUES);
		}
		PUT(CMDTYPES, CMDTYPE);
		PUT(QUERYIDS, QUERYID);
		PUT(NESTED_QUERYIDS, NESTED_QUERYID);
		/* a nested query id stored once, as the query id (30_archive.sql) */
		if (GOT(NESTED_IS_QUERYID, &d) && DatumGetInt32(d) == 1)
		{
			VALUE(NESTED_QUERYID) = VALUE(QUERYID);
			ISNULL(NESTED_QUERYID) = ISNULL(QUERYID);
		}
		PUT(BLOCKERS, BLOCKERS);
		PUT(BLOCKERPIDS, BLOCKERPID);
		PUT(BLOCKER_STATES, BLOCKER_STATE);
		PUT(BLOCKER_USESYSIDS, BLOCKER_USESYSID);
		PUT(BLOCKING_PIDS, BLOCKING_PIDS);
		PUT(LOCK_TYPES, LOCK_TYPE);
		PUT(LOCK_RELATIONS, LOCK_RELATION);
		PUT(LOCK_TARGETS, LOCK_TARGET);
		PUT(LOCK_MODES, LOCK_MODE);
		PUT(BLOCKER_LOCK_MODES, BLOCKER_LOCK_MODES);

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
