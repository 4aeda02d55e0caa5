/*-------------------------------------------------------------------------
 *
 * batch_samples.c
 *		pgsentinel_batch_samples(): the samples of one archive batch, read
 *		back from their payload as arrays.
 *
 * A batch (pgsentinel_archive_batch and the fleet's copy,
 * sql-src/archive/30_archive.sql) keeps its samples' ids, times, periods,
 * weights, active sessions and blocked flags as one payload
 * (batch_format.c, src/columns.txt's [sample_data]); its readers want them
 * as arrays, element i of each the batch's i-th sample, as
 * pgsentinel_batch_rows() takes them and as the views unnest them.  As for
 * the rows, nothing in the payload is trusted: its columns that are there
 * must have one element a sample each (a column of NULLs, absent, reads as
 * NULLs), a value out of its type's range is an error, and a batch has no
 * more samples than a UTC day at the shortest sampling period: what is
 * allocated (the arrays returned) is checked against that before it is.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "archive/archive.h"

PG_FUNCTION_INFO_V1(pgsentinel_batch_samples);

#define NUM_COLS PGS_SAMPLE_DATA_COLS

/*
 * The most samples a batch holds: a batch is one archiving step's samples
 * of one UTC day, at most one each 10 ms (pgsentinel_ash.sampling_period's
 * least).
 */
#define MAX_BATCH_SAMPLES	(86400 * 100)

/* The element type of each column's array. */
static const Oid elem_types[NUM_COLS] = {PGS_SAMPLE_DATA_ELEMENT_TYPES};

/* One column of the payload, read in order. */
typedef struct SampleColumn
{
	PgsBatchColumnKind kind;
	int			n;
	PgsPackedReader packed;
	PgsFloatsReader floats;
} SampleColumn;

/* The next element of column c (of elements of type), or NULL (false). */
static bool
next_element(int c, Oid type, SampleColumn *col, Datum *value)
{
	int64		v;

	if (col->kind == PGS_BATCH_FLOAT8)
		return pgs_floats_next_datum(&col->floats, value);
	if (col->kind != PGS_BATCH_PACKED || !pgs_packed_next(&col->packed, &v))
		return false;
	if ((type == INT4OID && (v < PG_INT32_MIN || v > PG_INT32_MAX)) ||
		(type == BOOLOID && (v < 0 || v > 1)))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("archive batch sample column %d holds %lld, out of range for %s",
						c + 1, (long long) v, format_type_be(type))));
	if (type == INT4OID)
		*value = Int32GetDatum((int32) v);
	else if (type == BOOLOID)
		*value = BoolGetDatum(v == 1);
	else
		*value = Int64GetDatum(v);
	return true;
}

/*
 * SQL function pgsentinel_batch_samples(sample_data): the columns of a
 * batch's samples as arrays of as many elements as its longest column.
 */
Datum
pgsentinel_batch_samples(PG_FUNCTION_ARGS)
{
	PgsBatchColumnBytes bytes[PGS_BATCH_MAX_COLUMNS];
	SampleColumn cols[NUM_COLS];
	Datum		result[NUM_COLS];
	bool		result_nulls[NUM_COLS] = {0};
	TupleDesc	tupdesc;
	int			n = 0;
	bool		have = false;	/* a column that is there was read */

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE ||
		tupdesc->natts != NUM_COLS)
		elog(ERROR, "pgsentinel_batch_samples is declared with other columns than [sample_data]'s");
	for (int c = 0; c < NUM_COLS; c++)
		if (TupleDescAttr(tupdesc, c)->atttypid != get_array_type(elem_types[c]))
			elog(ERROR, "pgsentinel_batch_samples: result column %d is not of the expected type",
				 c + 1);

	pgs_batch_open(PG_GETARG_BYTEA_PP(0), &pgs_samples_layout, bytes);
	for (int c = 0; c < NUM_COLS; c++)
	{
		memset(&cols[c], 0, sizeof(cols[c]));
		cols[c].kind = bytes[c].kind;
		if (bytes[c].kind == PGS_BATCH_PACKED)
			cols[c].n = pgs_packed_begin_bytes(&cols[c].packed, bytes[c].data, bytes[c].len);
		else if (bytes[c].kind == PGS_BATCH_FLOAT8)
			cols[c].n = pgs_floats_begin(&cols[c].floats, &bytes[c]);
		if (cols[c].kind == PGS_BATCH_ABSENT)
			continue;
		if (have && cols[c].n != n)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("archive batch sample columns have %d and %d elements, not one a sample each",
							n, cols[c].n)));
		n = cols[c].n;
		have = true;
	}
	if (n > MAX_BATCH_SAMPLES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("archive batch has %d samples, more than a batch can have (%d)",
						n, MAX_BATCH_SAMPLES),
				 errhint("A batch holds the samples of one UTC day at most, one each 10 ms at the most: this payload was not written by pgsentinel_sample_pack().")));

	for (int c = 0; c < NUM_COLS; c++)
	{
		Datum	   *values = palloc(sizeof(Datum) * Max(n, 1));
		bool	   *nulls = palloc(sizeof(bool) * Max(n, 1));
		int			dims[1] = {n};
		int			lbs[1] = {1};
		int16		typlen;
		bool		typbyval;
		char		typalign;

		for (int i = 0; i < n; i++)
		{
			if ((i & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			nulls[i] = !(i < cols[c].n &&
						 next_element(c, elem_types[c], &cols[c], &values[i]));
		}
		get_typlenbyvalalign(elem_types[c], &typlen, &typbyval, &typalign);
		if (n == 0)
			result[c] = PointerGetDatum(construct_empty_array(elem_types[c]));
		else
			result[c] = PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs,
														   elem_types[c], typlen,
														   typbyval, typalign));
		pfree(values);
		pfree(nulls);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  result, result_nulls)));
}
