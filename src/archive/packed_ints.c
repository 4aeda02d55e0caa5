/*-------------------------------------------------------------------------
 *
 * packed_ints.c
 *		Integer columns of an archive batch, packed: pgsentinel_pack() and
 *		pgsentinel_unpack(), and the decoder batch_rows.c reads them with.
 *
 * A batch's integer row columns (its rows' sample indexes, sessions,
 * waits, texts, times and xids: 30_archive.sql says which) change little
 * from one row to the next, as the rows are ordered by session then
 * sample: the same session, wait and text, a time a second later, an xid
 * a few hundred further.  Stored as arrays of 4 or 8 bytes an element,
 * TOAST's compression finds few repeats in them; stored as each element's
 * difference from the one before, in as few bytes as it needs, most take
 * one to three bytes and repeat, and compress further.
 *
 * The format (a bytea):
 *   - one byte: PACKED_PLAIN (no NULL element) or PACKED_NULLS;
 *   - with PACKED_NULLS: the element count (a varint), then a bitmap of
 *     the elements that are not NULL (bit i of byte i / 8, low bit first);
 *   - then, for each element that is not NULL, in order, its difference
 *     from the previous such element (the first's from 0), as an unsigned
 *     64-bit number (wrapping: every int64 reads back exactly), zigzag
 *     encoded (0, -1, 1, -2 ... as 0, 1, 2, 3 ...) and written as a varint:
 *     7 bits a byte, low bits first, the high bit set on every byte but
 *     the last.
 * Without PACKED_NULLS the count is the number of varints.  An empty
 * array is the single byte PACKED_PLAIN.
 *
 * The decoder trusts nothing (a fleet's tables are written by whoever may
 * write to them): a truncated varint, a varint longer than 64 bits, bytes
 * left over, an unknown format byte or a count the bytes cannot hold is an
 * error, never a read past the end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "archive/archive.h"

PG_FUNCTION_INFO_V1(pgsentinel_pack);
PG_FUNCTION_INFO_V1(pgsentinel_unpack);

#define PACKED_PLAIN	0x01
#define PACKED_NULLS	0x02

static inline uint64
zigzag(int64 v)
{
	return ((uint64) v << 1) ^ (uint64) (v >> 63);
}

static inline int64
unzigzag(uint64 u)
{
	return (int64) ((u >> 1) ^ (~(u & 1) + 1));
}

static void
put_varint(StringInfo buf, uint64 u)
{
	char		bytes[10];
	int			n = 0;

	while (u >= 0x80)
	{
		bytes[n++] = (char) ((u & 0x7F) | 0x80);
		u >>= 7;
	}
	bytes[n++] = (char) u;
	appendBinaryStringInfo(buf, bytes, n);
}

static void
corrupt(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("packed integer array is corrupt: %s", why),
			 errhint("A batch of the archive holds values pgsentinel_pack() did not write.")));
}

static uint64
get_varint(const unsigned char **p, const unsigned char *end)
{
	uint64		u = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		unsigned char b;

		if (*p >= end)
			corrupt("a number is cut short");
		b = *(*p)++;
		/* the tenth byte may hold only bit 63 */
		if (shift == 63 && b > 1)
			corrupt("a number is longer than 64 bits");
		u |= (uint64) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
			return u;
	}
	corrupt("a number is longer than 64 bits");
	return 0;					/* not reached */
}

/*
 * Decode a packed array into palloc'd values and nulls (*nulls NULL when
 * no element is NULL); returns the element count.
 */
int
pgs_unpack_ints(bytea *packed, int64 **values, bool **nulls)
{
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(packed);
	const unsigned char *end = p + VARSIZE_ANY_EXHDR(packed);
	const unsigned char *bitmap = NULL;
	int64		prev = 0;
	int			n;
	int			cap;

	*values = NULL;
	*nulls = NULL;
	if (p >= end)
		corrupt("it is empty");
	if (*p == PACKED_NULLS)
	{
		uint64		count;

		p++;
		count = get_varint(&p, end);
		/* every element costs a bit of the bitmap at least */
		if (count > (uint64) (end - p) * 8 || count > MaxAllocSize / sizeof(int64))
			corrupt("its count is larger than its bytes");
		n = (int) count;
		bitmap = p;
		p += (n + 7) / 8;
		*values = palloc(Max(n, 1) * sizeof(int64));
		*nulls = palloc(Max(n, 1) * sizeof(bool));
		for (int i = 0; i < n; i++)
		{
			CHECK_FOR_INTERRUPTS();
			(*nulls)[i] = (bitmap[i / 8] & (1 << (i % 8))) == 0;
			if ((*nulls)[i])
			{
				(*values)[i] = 0;
				continue;
			}
			prev = (int64) ((uint64) prev + (uint64) unzigzag(get_varint(&p, end)));
			(*values)[i] = prev;
		}
		if (p != end)
			corrupt("bytes are left after its last element");
		return n;
	}
	if (*p != PACKED_PLAIN)
		corrupt("its format byte is unknown");
	p++;
	/* at most one element a byte */
	cap = (int) Min((Size) (end - p), MaxAllocSize / sizeof(int64));
	*values = palloc(Max(cap, 1) * sizeof(int64));
	n = 0;
	while (p < end)
	{
		CHECK_FOR_INTERRUPTS();
		if (n >= cap)
			corrupt("it has more elements than bytes");
		prev = (int64) ((uint64) prev + (uint64) unzigzag(get_varint(&p, end)));
		(*values)[n++] = prev;
	}
	return n;
}

/* The element of a one-dimensional array of bigint, integer or xid. */
static int64
element_int64(Datum d, Oid elemtype)
{
	switch (elemtype)
	{
		case INT8OID:
			return DatumGetInt64(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:				/* XIDOID */
			return (int64) DatumGetTransactionId(d);
	}
}

/*
 * SQL function pgsentinel_pack(bigint[] | integer[] | xid[]): the array
 * packed (above); NULL for NULL.
 */
Datum
pgsentinel_pack(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	Oid			elemtype = ARR_ELEMTYPE(a);
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	Datum	   *elems;
	bool	   *elemnulls;
	int			n;
	bool		any_null = false;
	StringInfoData buf;
	bytea	   *result;
	int64		prev = 0;

	if (elemtype != INT8OID && elemtype != INT4OID && elemtype != XIDOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("pgsentinel_pack() packs arrays of bigint, integer or xid, not of %s",
						format_type_be(elemtype))));
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("pgsentinel_pack() packs one-dimensional arrays")));
	get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
	deconstruct_array(a, elemtype, elmlen, elmbyval, elmalign,
					  &elems, &elemnulls, &n);
	for (int i = 0; i < n; i++)
		any_null |= elemnulls[i];

	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	appendStringInfoChar(&buf, any_null ? PACKED_NULLS : PACKED_PLAIN);
	if (any_null)
	{
		int			start;

		put_varint(&buf, (uint64) n);
		start = buf.len;
		appendStringInfoSpaces(&buf, (n + 7) / 8);
		memset(buf.data + start, 0, (n + 7) / 8);
		for (int i = 0; i < n; i++)
			if (!elemnulls[i])
				buf.data[start + i / 8] |= (char) (1 << (i % 8));
	}
	for (int i = 0; i < n; i++)
	{
		int64		v;

		if (elemnulls[i])
			continue;
		v = element_int64(elems[i], elemtype);
		put_varint(&buf, zigzag((int64) ((uint64) v - (uint64) prev)));
		prev = v;
	}
	result = (bytea *) buf.data;
	SET_VARSIZE(result, buf.len);
	PG_RETURN_BYTEA_P(result);
}

/*
 * SQL function pgsentinel_unpack(bytea): the bigint[] a packed array
 * holds (xids and integers read back as bigint).
 */
Datum
pgsentinel_unpack(PG_FUNCTION_ARGS)
{
	bytea	   *packed = PG_GETARG_BYTEA_PP(0);
	int64	   *values;
	bool	   *nulls;
	Datum	   *elems;
	int			n;
	int			dims[1];
	int			lbs[1] = {1};

	n = pgs_unpack_ints(packed, &values, &nulls);
	elems = palloc(Max(n, 1) * sizeof(Datum));
	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum(values[i]);
	dims[0] = n;
	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));
	PG_RETURN_ARRAYTYPE_P(construct_md_array(elems, nulls, 1, dims, lbs, INT8OID,
											 sizeof(int64), FLOAT8PASSBYVAL,
											 TYPALIGN_DOUBLE));
}
