/*-------------------------------------------------------------------------
 *
 * rollup_rows.c
 *		pgsentinel_rollup_minute_rows(), _session_minute_rows() and
 *		_blocking_minute_rows(): a minute's rollup read back from its
 *		payload.
 *
 * Each minute rollup (pgsentinel_rollup_minute_batch, _session_minute_batch
 * and _blocking_minute_batch, and the fleet's copies:
 * sql-src/archive/30_archive.sql) keeps a minute's rows as one payload
 * (batch_format.c) of the columns of its section of src/columns.txt
 * ([minute_data], [session_minute_data], [blocking_minute_data]), each
 * read back as its element type: integers, oids, "char"s and times from
 * packed integers, blocked_by from an array's text, names and texts as
 * they are, times spent as double precision.  As for the archive's rows,
 * nothing in the payload is trusted: an element missing from a column
 * reads as NULL, a value out of its type's range is an error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "archive/archive.h"

PG_FUNCTION_INFO_V1(pgsentinel_rollup_minute_rows);
PG_FUNCTION_INFO_V1(pgsentinel_rollup_session_minute_rows);
PG_FUNCTION_INFO_V1(pgsentinel_rollup_blocking_minute_rows);

/* The element types of each layout's columns, as returned. */
static const Oid minute_types[] = {PGS_MINUTE_DATA_ELEMENT_TYPES};
static const Oid session_minute_types[] = {PGS_SESSION_MINUTE_DATA_ELEMENT_TYPES};
static const Oid blocking_minute_types[] = {PGS_BLOCKING_MINUTE_DATA_ELEMENT_TYPES};

/* One column of the payload, read in order. */
typedef struct RollupColumn
{
	Oid			type;			/* of its elements, as returned */
	FmgrInfo   *array_in;		/* for an integer[] column: array_in() */
	PgsBatchColumnKind kind;
	int			n;
	PgsPackedReader packed;
	PgsTextsReader texts;
	PgsFloatsReader floats;
} RollupColumn;

static void
out_of_range(int c, Oid type, int64 v)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("minute rollup batch column %d holds %lld, out of range for %s",
					c + 1, (long long) v, format_type_be(type))));
}

/* An integer of column c as a Datum of its type, range checked. */
static Datum
integer_datum(int c, Oid type, int64 v)
{
	switch (type)
	{
		case INT4OID:
			if (v < PG_INT32_MIN || v > PG_INT32_MAX)
				out_of_range(c, type, v);
			return Int32GetDatum((int32) v);
		case OIDOID:
			if (v < 0 || v > PG_UINT32_MAX)
				out_of_range(c, type, v);
			return ObjectIdGetDatum((Oid) v);
		case CHAROID:
			if (v < 0 || v > PG_UINT8_MAX)
				out_of_range(c, type, v);
			return CharGetDatum((char) (unsigned char) v);
		case TIMESTAMPTZOID:
			if (!IS_VALID_TIMESTAMP(v) && !TIMESTAMP_NOT_FINITE(v))
				out_of_range(c, type, v);
			return TimestampTzGetDatum((TimestampTz) v);
		default:				/* INT8OID */
			return Int64GetDatum(v);
	}
}

/* The next element of column c, or NULL (false). */
static bool
next_element(int c, RollupColumn *col, Datum *value)
{
	int64		v;

	switch (col->kind)
	{
		case PGS_BATCH_FLOAT8:
			return pgs_floats_next_datum(&col->floats, value);
		case PGS_BATCH_TEXTS:
			if (!pgs_texts_next(&col->texts, value))
				return false;
			/* blocked_by: the text of an integer array, read as one */
			if (col->type == INT4ARRAYOID)
				*value = InputFunctionCall(col->array_in,
										   TextDatumGetCString(*value),
										   INT4OID, -1);
			return true;
		case PGS_BATCH_PACKED:
			if (!pgs_packed_next(&col->packed, &v))
				return false;
			*value = integer_datum(c, col->type, v);
			return true;
		default:
			return false;
	}
}

/*
 * The rows of a minute rollup's payload (its first argument) of the
 * layout, whose columns' element types are types: one row per element, in
 * the payload's order.  A row's values are made in a context of their own,
 * reset once the tuplestore has copied them: what this takes grows with
 * the rows' bytes, not with the rows a payload claims.
 */
static Datum
rollup_rows(FunctionCallInfo fcinfo, const PgsBatchLayout *layout,
			const Oid *types)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			ncols = layout->ncols;
	PgsBatchColumnBytes bytes[PGS_BATCH_MAX_COLUMNS];
	RollupColumn cols[PGS_BATCH_MAX_COLUMNS];
	int			nrows = 0;
	FmgrInfo	array_in;
	MemoryContext row_cxt;
	MemoryContext oldcxt;

	Assert(ncols <= PGS_BATCH_MAX_COLUMNS);
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != ncols)
		elog(ERROR, "a minute rollup's rows are declared with %d columns, not %d",
			 rsinfo->setDesc->natts, ncols);
	for (int c = 0; c < ncols; c++)
		if (TupleDescAttr(rsinfo->setDesc, c)->atttypid != types[c])
			elog(ERROR, "a minute rollup's result column %d is not of the expected type",
				 c + 1);

	fmgr_info(F_ARRAY_IN, &array_in);
	pgs_batch_open(PG_GETARG_BYTEA_PP(0), layout, bytes);
	for (int c = 0; c < ncols; c++)
	{
		memset(&cols[c], 0, sizeof(cols[c]));
		cols[c].type = types[c];
		cols[c].array_in = &array_in;
		cols[c].kind = bytes[c].kind;
		if (bytes[c].kind == PGS_BATCH_PACKED)
			cols[c].n = pgs_packed_begin_bytes(&cols[c].packed, bytes[c].data, bytes[c].len);
		else if (bytes[c].kind == PGS_BATCH_TEXTS)
			cols[c].n = pgs_texts_begin(&cols[c].texts, &bytes[c]);
		else if (bytes[c].kind == PGS_BATCH_FLOAT8)
			cols[c].n = pgs_floats_begin(&cols[c].floats, &bytes[c]);
		nrows = Max(nrows, cols[c].n);
	}

	row_cxt = AllocSetContextCreate(CurrentMemoryContext,
									"pgsentinel minute rollup row",
									ALLOCSET_SMALL_SIZES);
	for (int j = 0; j < nrows; j++)
	{
		Datum		values[PGS_BATCH_MAX_COLUMNS];
		bool		nulls[PGS_BATCH_MAX_COLUMNS];

		CHECK_FOR_INTERRUPTS();
		oldcxt = MemoryContextSwitchTo(row_cxt);
		for (int c = 0; c < ncols; c++)
			nulls[c] = !(j < cols[c].n && next_element(c, &cols[c], &values[c]));
		MemoryContextSwitchTo(oldcxt);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextReset(row_cxt);
	}
	MemoryContextDelete(row_cxt);
	return (Datum) 0;
}

/*
 * SQL functions pgsentinel_rollup_minute_rows(row_data),
 * pgsentinel_rollup_session_minute_rows(row_data) and
 * pgsentinel_rollup_blocking_minute_rows(row_data): the rows of a minute.
 */
Datum
pgsentinel_rollup_minute_rows(PG_FUNCTION_ARGS)
{
	return rollup_rows(fcinfo, &pgs_minute_layout, minute_types);
}

Datum
pgsentinel_rollup_session_minute_rows(PG_FUNCTION_ARGS)
{
	return rollup_rows(fcinfo, &pgs_session_minute_layout, session_minute_types);
}

Datum
pgsentinel_rollup_blocking_minute_rows(PG_FUNCTION_ARGS)
{
	return rollup_rows(fcinfo, &pgs_blocking_minute_layout, blocking_minute_types);
}
