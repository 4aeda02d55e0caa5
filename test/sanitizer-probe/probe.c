/*
 * probe.c -- scripts/sanitize-check.sh's self-test: two bugs of the kind
 * the sanitizer suite is there to catch in the extension's code, which
 * ASan must report when this module is built as the extension is.
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(probe_write);
PG_FUNCTION_INFO_V1(probe_read_freed);

/* Write byte n of a palloc'd 10-byte chunk: n = 10 is one past its end. */
Datum
probe_write(PG_FUNCTION_ARGS)
{
	char	   *p = palloc(10);
	volatile int n = PG_GETARG_INT32(0);

	p[n] = 'x';
	PG_RETURN_INT32(p[n]);
}

/* Read a chunk after pfree(). */
Datum
probe_read_freed(PG_FUNCTION_ARGS)
{
	char	   *p = palloc(100);
	volatile char *q = p;

	pfree(p);
	PG_RETURN_INT32(q[1]);
}
