/*-------------------------------------------------------------------------
 *
 * statement_rows.c
 *		pgsentinel_statement_rows(): the readings of one statements batch,
 *		read back.
 *
 * A statements batch (pgsentinel_archive_statement_batch,
 * sql-src/archive/32_archive_statements.sql) holds the readings one
 * archiving step took on one UTC day as one payload (batch_format.c).
 * Every reader of the statements archive (its views, the fleet's, the
 * reports' top statements) decodes a batch through this function: the
 * payload is expanded once and its columns read in place, in one pass.
 * As for the session rows (batch_rows.c), nothing in the payload is
 * trusted: an element missing from a column reads as NULL, a value out of
 * its column's range or a time that overflows is an error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "archive/archive.h"

PG_FUNCTION_INFO_V1(pgsentinel_statement_rows);

/*
 * The payload's columns (src/columns.txt's [reading_data]) are the
 * result's ([reading]): ash_us and prev_us read back as times
 * (PGS_READING_ASH_TIME, PGS_READING_PREV_ASH_TIME), the others as stored.
 */
#define NUM_COLS PGS_READING_COLS
StaticAssertDecl(PGS_READING_COLS == PGS_READING_DATA_COLS,
				 "a reading's columns are its payload's");
static const Oid col_types[NUM_COLS] = {PGS_READING_COLUMN_TYPES};

/* One column of the payload, read in order. */
typedef struct ReadingColumn
{
	PgsBatchColumnKind kind;
	int			n;
	PgsPackedReader packed;
	PgsFloatsReader floats;
} ReadingColumn;

/* An integer of column c as a Datum of the column's type, range checked. */
static Datum
integer_datum(int c, int64 v)
{
	switch (col_types[c])
	{
		case OIDOID:
			if (v < 0 || v > PG_UINT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("statements batch column %d holds %lld, out of range for oid",
								c + 1, (long long) v)));
			return ObjectIdGetDatum((Oid) v);
		case BOOLOID:
			if (v != 0 && v != 1)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("statements batch column %d holds %lld, not a boolean",
								c + 1, (long long) v)));
			return BoolGetDatum(v == 1);
		default:				/* INT8OID; the times are read as such too */
			return Int64GetDatum(v);
	}
}

/* The next element of column c, or NULL (false). */
static bool
next_element(int c, ReadingColumn *col, Datum *value)
{
	int64		v;

	if (col->kind == PGS_BATCH_FLOAT8)
		return pgs_floats_next_datum(&col->floats, value);
	if (col->kind != PGS_BATCH_PACKED || !pgs_packed_next(&col->packed, &v))
		return false;
	*value = integer_datum(c, v);
	return true;
}

/*
 * SQL function pgsentinel_statement_rows(first_time, row_data): one row per
 * reading of the payload, in its order, the times read back (ash_time
 * after first_time, prev_ash_time prev_us before it).
 */
Datum
pgsentinel_statement_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz first = PG_GETARG_TIMESTAMPTZ(0);
	PgsBatchColumnBytes bytes[NUM_COLS];
	ReadingColumn cols[NUM_COLS];
	int			nrows = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != NUM_COLS)
		elog(ERROR, "pgsentinel_statement_rows: the declared result has %d columns, not %d",
			 rsinfo->setDesc->natts, NUM_COLS);
	for (int c = 0; c < NUM_COLS; c++)
		if (TupleDescAttr(rsinfo->setDesc, c)->atttypid != col_types[c])
			elog(ERROR, "pgsentinel_statement_rows: result column %d is not of the expected type",
				 c + 1);

	pgs_batch_open(PG_GETARG_BYTEA_PP(1), &pgs_readings_layout, bytes);
	for (int c = 0; c < NUM_COLS; c++)
	{
		cols[c].kind = bytes[c].kind;
		cols[c].n = 0;
		if (bytes[c].kind == PGS_BATCH_PACKED)
			cols[c].n = pgs_packed_begin_bytes(&cols[c].packed, bytes[c].data, bytes[c].len);
		else if (bytes[c].kind == PGS_BATCH_FLOAT8)
			cols[c].n = pgs_floats_begin(&cols[c].floats, &bytes[c]);
		nrows = Max(nrows, cols[c].n);
	}

	for (int j = 0; j < nrows; j++)
	{
		Datum		values[NUM_COLS];
		bool		nulls[NUM_COLS];

		CHECK_FOR_INTERRUPTS();
		for (int c = 0; c < NUM_COLS; c++)
			nulls[c] = !(j < cols[c].n && next_element(c, &cols[c], &values[c]));

		/* prev_us is the time before ash_time: both needed */
		if (!nulls[PGS_READING_PREV_ASH_TIME] && !nulls[PGS_READING_ASH_TIME])
		{
			int64		us;

			if (pg_sub_s64_overflow(DatumGetInt64(values[PGS_READING_ASH_TIME]),
									DatumGetInt64(values[PGS_READING_PREV_ASH_TIME]), &us))
				ereport(ERROR,
						(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
						 errmsg("statements batch time out of range")));
			values[PGS_READING_PREV_ASH_TIME] = TimestampTzGetDatum(pgs_us_after(first, us));
		}
		else
			nulls[PGS_READING_PREV_ASH_TIME] = true;
		if (!nulls[PGS_READING_ASH_TIME])
			values[PGS_READING_ASH_TIME] =
				TimestampTzGetDatum(pgs_us_after(first, DatumGetInt64(values[PGS_READING_ASH_TIME])));

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
