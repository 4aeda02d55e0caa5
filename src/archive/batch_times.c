/*-------------------------------------------------------------------------
 *
 * batch_times.c
 *		The times of an archive batch: microseconds after the batch's
 *		first sample, or after another time of the same row.
 *
 * The batches (sql-src/archive/30_archive.sql) store every time as the signed
 * number of microseconds from another time: pgsentinel_us_between()
 * writes them, pgsentinel_us_after() and batch_rows.c read them back.
 * Both are exact (a timestamptz is a count of microseconds) and check for
 * overflow: a fleet's batches are written by whoever can write its tables.
 * The reports read tens of thousands of sample times a day of window, so
 * these are C, not SQL (an interval product and sum in SQL cost ~2 us).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "fmgr.h"
#include "utils/timestamp.h"

#include "archive/archive.h"

PG_FUNCTION_INFO_V1(pgsentinel_us_after);
PG_FUNCTION_INFO_V1(pgsentinel_us_between);

/* t plus us microseconds; infinity stays infinity, as with an interval. */
TimestampTz
pgs_us_after(TimestampTz t, int64 us)
{
	TimestampTz r;

	if (TIMESTAMP_NOT_FINITE(t))
		return t;
	if (pg_add_s64_overflow(t, us, &r) || !IS_VALID_TIMESTAMP(r))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range in an archive batch")));
	return r;
}

/* SQL function pgsentinel_us_after(a timestamptz, us bigint) */
Datum
pgsentinel_us_after(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(pgs_us_after(PG_GETARG_TIMESTAMPTZ(0),
									   PG_GETARG_INT64(1)));
}

/*
 * SQL function pgsentinel_us_between(a timestamptz, b timestamptz): the
 * microseconds from a to b.  An infinite time has no such distance.
 */
Datum
pgsentinel_us_between(PG_FUNCTION_ARGS)
{
	TimestampTz a = PG_GETARG_TIMESTAMPTZ(0);
	TimestampTz b = PG_GETARG_TIMESTAMPTZ(1);
	int64		us;

	if (TIMESTAMP_NOT_FINITE(a) || TIMESTAMP_NOT_FINITE(b))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("cannot store an infinite time in an archive batch")));
	if (pg_sub_s64_overflow(b, a, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("interval out of range in an archive batch")));
	PG_RETURN_INT64(us);
}
