/*-------------------------------------------------------------------------
 *
 * packed_ints.c
 *		Integer columns of an archive batch, packed: pgsentinel_pack() and
 *		pgsentinel_unpack(), and the decoder batch_rows.c reads them with.
 *
 * A batch's integer row columns (its rows' sample indexes, sessions,
 * waits, texts, times and xids: 30_archive.sql says which) change little
 * from one row to the next, as the rows are ordered by sample then
 * session: the same sample, a session id one higher, an xid or a start
 * time near the row before's.  Stored as arrays of 4 or 8 bytes an element,
 * TOAST's compression finds few repeats in them; stored as each element's
 * difference from the one before, in as few bytes as it needs, most take
 * one to three bytes and repeat, and compress further.
 *
 * Not every column is like that: a wait event's id or a waiter's time
 * within its minute jump back and forth from one row to the next, and
 * their differences take more bytes than they do.
 * The packer writes each array both ways and keeps the one that
 * compresses shorter.
 *
 * The format (a bytea):
 *   - one byte: PACKED_PLAIN (no NULL element) or PACKED_NULLS, each
 *     element as its difference from the one before; PACKED_PLAIN_VALUES
 *     or PACKED_NULLS_VALUES, each element as it is;
 *   - with PACKED_NULLS or PACKED_NULLS_VALUES: the element count (a
 *     varint), then a bitmap of the elements that are not NULL (bit i of
 *     byte i / 8, low bit first);
 *   - then, for each element that is not NULL, in order, its value or its
 *     difference from the previous such element (the first's from 0), as
 *     an unsigned 64-bit number (wrapping: every int64 reads back
 *     exactly), zigzag encoded (0, -1, 1, -2 ... as 0, 1, 2, 3 ...) and
 *     written as a varint: 7 bits a byte, low bits first, the high bit set
 *     on every byte but the last.
 * Without a bitmap the count is the number of varints.  An empty array is
 * the single byte PACKED_PLAIN.  (The first packer wrote differences only:
 * its arrays read back the same.)
 *
 * A column of few distinct values that jump about (the times of a minute's
 * samples a blocking part was first and last seen at, a statement's query
 * id) takes less as a dictionary: PACKED_PLAIN_DICT or PACKED_NULLS_DICT,
 * after the count and bitmap of the latter, the number of distinct values
 * (a varint, at least one), the distinct values in ascending order (the
 * first zigzag encoded, each next as its difference from the one before,
 * at least 1, unsigned), then, for each element that is not NULL, its
 * value's index among them (a varint, from 0).  The packer writes it too
 * where values repeat, and keeps the shortest of the three.
 *
 * The decoder trusts nothing (a fleet's tables are written by whoever may
 * write to them): a truncated varint, a varint longer than 64 bits, bytes
 * left over, an unknown format byte or a count the bytes cannot hold is an
 * error, never a read past the end; so is a count no batch has (more than
 * a ring's rows), before anything is allocated for it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "port/pg_bitutils.h"

#include "archive/archive.h"
#include "guc.h"

PG_FUNCTION_INFO_V1(pgsentinel_pack);
PG_FUNCTION_INFO_V1(pgsentinel_unpack);

#define PACKED_PLAIN	0x01
#define PACKED_NULLS	0x02
#define PACKED_PLAIN_VALUES	0x03
#define PACKED_NULLS_VALUES	0x04
#define PACKED_PLAIN_DICT	0x05
#define PACKED_NULLS_DICT	0x06
#define PACKED_LAST_FORMAT	PACKED_NULLS_DICT

/* The bytes of a payload's body an encoding is ranked after (pgs_shorter_compressed()). */
#define PACKED_CONTEXT		(32 * 1024)

/* The format byte of an array of differences or values, with or without NULLs. */
#define PACKED_FORMAT(nulls, values) \
	((nulls) ? ((values) ? PACKED_NULLS_VALUES : PACKED_NULLS) : \
	 ((values) ? PACKED_PLAIN_VALUES : PACKED_PLAIN))

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

void
pgs_put_varint(StringInfo buf, uint64 u)
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

/*
 * Read the varint at *p (before end) into *u and move *p past it.  Returns
 * NULL, or why the bytes are not a varint (the caller says of what).
 */
const char *
pgs_get_varint(const unsigned char **p, const unsigned char *end, uint64 *u)
{
	*u = 0;
	for (int shift = 0; shift < 64; shift += 7)
	{
		unsigned char b;

		if (*p >= end)
			return "a number is cut short";
		b = *(*p)++;
		/* the tenth byte may hold only bit 63 */
		if (shift == 63 && b > 1)
			return "a number is longer than 64 bits";
		*u |= (uint64) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
			return NULL;
	}
	return "a number is longer than 64 bits";
}

static uint64
get_varint(const unsigned char **p, const unsigned char *end)
{
	uint64		u;
	const char *why = pgs_get_varint(p, end, &u);

	if (why != NULL)
		corrupt(why);
	return u;
}

/*
 * The number of varints in [p, end), each checked: none cut short, none
 * longer than 64 bits.  One pass over the bytes, allocating nothing.
 */
static int64
count_varints(const unsigned char *p, const unsigned char *end)
{
	int64		count = 0;
	int			len = 0;

	while (p < end)
	{
		const unsigned char *stop = p + Min(end - p, 1024 * 1024);

		CHECK_FOR_INTERRUPTS();
		for (; p < stop; p++)
		{
			/* the tenth byte may hold only bit 63 */
			if (++len == 10 && *p > 1)
				corrupt("a number is longer than 64 bits");
			if ((*p & 0x80) == 0)
			{
				count++;
				len = 0;
			}
		}
	}
	if (len > 0)
		corrupt("a number is cut short");
	return count;
}

/* The bits set among the first n of a bitmap. */
static int64
count_bits(const unsigned char *bitmap, int n)
{
	int64		count = pg_popcount((const char *) bitmap, n / 8);

	if (n % 8 != 0)
		count += pg_number_of_ones[bitmap[n / 8] & ((1 << (n % 8)) - 1)];
	return count;
}

/*
 * Refuse a count of elements that no batch of the archive has: a batch is
 * read from one ring, which holds at most PGS_RING_MAX_ENTRIES rows.  An
 * element takes a bit of input at least, a value and a flag when decoded:
 * what decodes more is checked before anything is allocated for it.
 */
void
pgs_check_count(uint64 count)
{
	if (count > PGS_RING_MAX_ENTRIES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("packed integer array has %llu elements, more than an archive batch can have (%d)",
						(unsigned long long) count, PGS_RING_MAX_ENTRIES),
				 errhint("A batch holds at most the rows of one ring (pgsentinel_ash.max_entries and pgsentinel_pgssh.max_entries are at most %d): this value was not written by pgsentinel_pack().",
						 PGS_RING_MAX_ENTRIES)));
}

/*
 * Read the dictionary of a PACKED_*_DICT array at p (before end) into
 * r->dict: its count (at least one, no more than the bytes or a batch's
 * elements can hold, checked before anything is allocated) and its values,
 * strictly ascending.  Returns where its indexes begin.
 */
static const unsigned char *
read_dict(PgsPackedReader *r, const unsigned char *p, const unsigned char *end)
{
	uint64		ndict = get_varint(&p, end);
	int64	   *dict;

	/* every value costs a byte at least */
	if (ndict == 0 || ndict > (uint64) (end - p))
		corrupt("its dictionary's count does not fit its bytes");
	pgs_check_count(ndict);
	dict = palloc(sizeof(int64) * ndict);
	dict[0] = unzigzag(get_varint(&p, end));
	for (uint64 k = 1; k < ndict; k++)
	{
		uint64		step = get_varint(&p, end);
		/* PG_INT64_MAX - dict[k - 1], which is below 2^64 */
		uint64		room = (uint64) PG_INT64_MAX - (uint64) dict[k - 1];

		if (step == 0 || step > room)
			corrupt("its dictionary's values are not ascending");
		dict[k] = (int64) ((uint64) dict[k - 1] + step);
	}
	r->dict = dict;
	r->ndict = (int) ndict;
	return p;
}

/* Check that every index in [p, end) (varints, counted already) names a value of the dictionary. */
static void
check_dict_indexes(int ndict, const unsigned char *p, const unsigned char *end)
{
	for (int64 k = 0; p < end; k++)
	{
		if ((k & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (get_varint(&p, end) >= (uint64) ndict)
			corrupt("an index names none of its dictionary's values");
	}
}

/*
 * Begin reading a packed array: check all of it (format, count, every
 * number) in one pass that allocates nothing but a dictionary's values,
 * so that what follows can read it in order with pgs_packed_next().
 * Returns the element count.
 */
int
pgs_packed_begin(PgsPackedReader *r, bytea *packed)
{
	return pgs_packed_begin_bytes(r, VARDATA_ANY(packed), VARSIZE_ANY_EXHDR(packed));
}

/* pgs_packed_begin() of the len bytes at data (in a batch's payload). */
int
pgs_packed_begin_bytes(PgsPackedReader *r, const char *data, int len)
{
	const unsigned char *p = (const unsigned char *) data;
	const unsigned char *end = p + len;
	int			format;
	bool		nulls;
	int64		set = -1;		/* with a bitmap: the elements it sets */

	r->bitmap = NULL;
	r->i = 0;
	r->prev = 0;
	r->dict = NULL;
	r->ndict = 0;
	if (p >= end)
		corrupt("it is empty");
	format = *p++;
	if (format > PACKED_LAST_FORMAT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("packed integer array format %d is not supported by this version of pgsentinel",
						format),
				 errhint("The batch was written by a newer version of pgsentinel: update the extension on this server (ALTER EXTENSION pgsentinel UPDATE) to the version of the server that wrote it.")));
	if (format == 0)
		corrupt("its format byte is unknown");
	r->differences = (format == PACKED_PLAIN || format == PACKED_NULLS);
	nulls = (format == PACKED_NULLS || format == PACKED_NULLS_VALUES ||
			 format == PACKED_NULLS_DICT);
	if (nulls)
	{
		uint64		count = get_varint(&p, end);

		/* every element costs a bit of the bitmap at least */
		if (count > (uint64) (end - p) * 8)
			corrupt("its count is larger than its bytes");
		pgs_check_count(count);
		r->n = (int) count;
		r->bitmap = p;
		p += (r->n + 7) / 8;
		set = count_bits(r->bitmap, r->n);
	}
	if (format == PACKED_PLAIN_DICT || format == PACKED_NULLS_DICT)
		p = read_dict(r, p, end);
	r->values = count_varints(p, end);
	if (nulls)
	{
		if (r->values < set)
			corrupt("a number is cut short");
		if (r->values > set)
			corrupt("bytes are left after its last element");
	}
	else
	{
		pgs_check_count(r->values);
		r->n = (int) r->values;
	}
	if (r->dict != NULL)
		check_dict_indexes(r->ndict, p, end);
	r->p = p;
	r->end = end;
	return r->n;
}

/*
 * The next element of a packed array (begun by pgs_packed_begin()): true
 * and its value in *value, or false for a NULL element and past the end.
 */
bool
pgs_packed_next(PgsPackedReader *r, int64 *value)
{
	int			i = r->i;

	if (i >= r->n)
		return false;
	r->i++;
	if (r->bitmap != NULL && (r->bitmap[i / 8] & (1 << (i % 8))) == 0)
		return false;
	if (r->dict != NULL)
		r->prev = r->dict[get_varint(&r->p, r->end)];	/* checked at begin */
	else if (r->differences)
		r->prev = (int64) ((uint64) r->prev + (uint64) unzigzag(get_varint(&r->p, r->end)));
	else
		r->prev = unzigzag(get_varint(&r->p, r->end));
	*value = r->prev;
	return true;
}

/*
 * Append n values packed (the format above) to buf; nulls[i] true: element
 * i is NULL (values[i] is not read).  nulls may be NULL: none is.
 */
void
pgs_pack_values(StringInfo buf, const int64 *values, const bool *nulls, int n,
				StringInfo context)
{
	PgsPackedWriter w;

	pgs_packed_write_init(&w);
	w.context = context;
	for (int i = 0; i < n; i++)
		pgs_packed_write(&w, values[i], nulls != NULL && nulls[i]);
	pgs_packed_write_end(&w, buf);
	pgs_packed_write_free(&w);
}

/*
 * A packed array written one element at a time (pgs_packed_write_*): the
 * bitmap and the numbers, both as differences and as values, are kept
 * apart until the end, when it is known whether any element was NULL and
 * which of the two the batch's compression makes the shorter.  What it
 * takes grows with what is written, as the packed bytes do.
 */
void
pgs_packed_write_init(PgsPackedWriter *w)
{
	initStringInfo(&w->bitmap);
	initStringInfo(&w->numbers);
	initStringInfo(&w->values);
	w->n = 0;
	w->any_null = false;
	w->prev = 0;
	w->context = NULL;
}

void
pgs_packed_write(PgsPackedWriter *w, int64 value, bool isnull)
{
	if (w->n % 8 == 0)
		appendStringInfoChar(&w->bitmap, 0);
	if (isnull)
		w->any_null = true;
	else
	{
		w->bitmap.data[w->n / 8] |= (char) (1 << (w->n % 8));
		pgs_put_varint(&w->numbers, zigzag((int64) ((uint64) value - (uint64) w->prev)));
		pgs_put_varint(&w->values, zigzag(value));
		w->prev = value;
	}
	w->n++;
}

/*
 * The length of src compressed by zstd at level 1 after prefix (raw
 * content, never read as a zstd dictionary; NULL: none), or an error code.
 */
static size_t
compressed_after(ZSTD_CCtx *cctx, char *out, size_t bound, const char *src, int len,
				 const char *prefix, int prefix_len)
{
	size_t		r;

	ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
	r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
	if (!ZSTD_isError(r) && prefix_len > 0)
		r = ZSTD_CCtx_refPrefix(cctx, prefix, prefix_len);	/* raw content */
	if (ZSTD_isError(r))
		return r;
	return ZSTD_compress2(cctx, out, bound, src, len);
}

/*
 * Whether a (alen bytes) compresses shorter than b (blen bytes): two
 * encodings of one column, compressed apart by zstd at level 1, which
 * ranks them as the payload's level 19 does (a column of query ids that
 * repeat takes less as values, one of times a second apart as
 * differences, whatever their varints' lengths).  context, if not NULL:
 * the payload's body so far, whose last PACKED_CONTEXT bytes both are
 * compressed after, as the payload compresses them (a column that repeats
 * one before it, as a blocking part's first time its last, takes less in
 * the form of that one).  Below a few hundred bytes, or above tens of
 * megabytes (an archiver catching up), their lengths decide.
 */
bool
pgs_shorter_compressed(const char *a, int alen, const char *b, int blen,
					   StringInfo context)
{
	size_t		bound;
	char	   *out;
	size_t		clen_a;
	size_t		clen_b;
	const char *prefix = NULL;
	int			prefix_len = 0;
	ZSTD_CCtx  *cctx;

	if (Max(alen, blen) < 256 || Max(alen, blen) > 64 * 1024 * 1024)
		return alen < blen;
	if (context != NULL)
	{
		prefix_len = Min(context->len, PACKED_CONTEXT);
		prefix = context->data + context->len - prefix_len;
	}
	bound = ZSTD_compressBound(Max(alen, blen));
	out = palloc(bound);
	cctx = ZSTD_createCCtx();
	if (cctx == NULL)
	{
		pfree(out);
		return alen < blen;
	}
	clen_a = compressed_after(cctx, out, bound, a, alen, prefix, prefix_len);
	clen_b = compressed_after(cctx, out, bound, b, blen, prefix, prefix_len);
	ZSTD_freeCCtx(cctx);
	pfree(out);
	if (ZSTD_isError(clen_a) || ZSTD_isError(clen_b))
		return alen < blen;
	return clen_a < clen_b;
}

/* Free what a writer took (its array appended, or given up). */
void
pgs_packed_write_free(PgsPackedWriter *w)
{
	pfree(w->bitmap.data);
	pfree(w->numbers.data);
	pfree(w->values.data);
}

static int
compare_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/*
 * The written array's numbers as a dictionary (PACKED_*_DICT, after the
 * bitmap) in dict, if its values repeat enough for that to pay (at least
 * two elements a distinct value): true then.
 */
static bool
write_dict(PgsPackedWriter *w, StringInfo dict)
{
	const unsigned char *p = (const unsigned char *) w->values.data;
	const unsigned char *end = p + w->values.len;
	int64	   *values;
	int64	   *distinct;
	int			nvalues = 0;
	int			ndistinct = 0;

	/* (where lengths decide, pgs_shorter_compressed(), so do its varints) */
	if (w->values.len > 64 * 1024 * 1024)
		return false;
	values = palloc(sizeof(int64) * Max(w->n, 1));

	while (p < end)
	{
		uint64		u;

		if ((nvalues & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		(void) pgs_get_varint(&p, end, &u); /* (written by pgs_packed_write()) */
		values[nvalues++] = unzigzag(u);
	}
	if (nvalues < 8)
	{
		pfree(values);
		return false;
	}
	distinct = palloc(sizeof(int64) * nvalues);
	memcpy(distinct, values, sizeof(int64) * nvalues);
	qsort(distinct, nvalues, sizeof(int64), compare_int64);
	for (int i = 0; i < nvalues; i++)
		if (ndistinct == 0 || distinct[i] != distinct[ndistinct - 1])
			distinct[ndistinct++] = distinct[i];
	if (ndistinct * 2 > nvalues)
	{
		pfree(values);
		pfree(distinct);
		return false;
	}
	pgs_put_varint(dict, (uint64) ndistinct);
	pgs_put_varint(dict, zigzag(distinct[0]));
	for (int k = 1; k < ndistinct; k++)
		pgs_put_varint(dict, (uint64) distinct[k] - (uint64) distinct[k - 1]);
	for (int i = 0; i < nvalues; i++)
	{
		int64	   *at;

		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		at = bsearch(&values[i], distinct, ndistinct, sizeof(int64),
					 compare_int64);
		pgs_put_varint(dict, (uint64) (at - distinct));
	}
	pfree(values);
	pfree(distinct);
	return true;
}

/*
 * Append the array written to buf: its numbers as differences, as values
 * or as a dictionary, whichever compresses shortest.
 */
void
pgs_packed_write_end(PgsPackedWriter *w, StringInfo buf)
{
	bool		as_values = pgs_shorter_compressed(w->values.data, w->values.len,
												   w->numbers.data, w->numbers.len,
												   w->context);
	StringInfo	numbers = as_values ? &w->values : &w->numbers;
	int			format = PACKED_FORMAT(w->any_null, as_values);
	StringInfoData dict;

	initStringInfo(&dict);
	if (write_dict(w, &dict) &&
		pgs_shorter_compressed(dict.data, dict.len, numbers->data, numbers->len,
							   w->context))
	{
		numbers = &dict;
		format = w->any_null ? PACKED_NULLS_DICT : PACKED_PLAIN_DICT;
	}
	appendStringInfoChar(buf, format);
	if (w->any_null)
	{
		pgs_put_varint(buf, (uint64) w->n);
		appendBinaryStringInfo(buf, w->bitmap.data, w->bitmap.len);
	}
	appendBinaryStringInfo(buf, numbers->data, numbers->len);
	pfree(dict.data);
}

/* The element of a one-dimensional array of bigint, integer, xid, oid or boolean. */
static int64
element_int64(Datum d, Oid elemtype)
{
	switch (elemtype)
	{
		case INT8OID:
			return DatumGetInt64(d);
		case INT4OID:
			return DatumGetInt32(d);
		case OIDOID:
			return (int64) DatumGetObjectId(d);
		case BOOLOID:
			return DatumGetBool(d) ? 1 : 0;
		case TIMESTAMPTZOID:
			return DatumGetTimestampTz(d);
		case CHAROID:
			return (unsigned char) DatumGetChar(d);
		default:				/* XIDOID */
			return (int64) DatumGetTransactionId(d);
	}
}

/*
 * Append the one-dimensional array a of bigint, integer, xid, oid or
 * boolean (0 and 1), packed, to buf; or, for the minute rollups' pack
 * functions (batch_format.c; pgsentinel_pack() is not declared for them),
 * of timestamptz (its microseconds) or "char" (its byte).
 */
void
pgs_pack_array(StringInfo buf, ArrayType *a, StringInfo context)
{
	Oid			elemtype = ARR_ELEMTYPE(a);
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	Datum	   *elems;
	bool	   *elemnulls;
	int			n;
	int64	   *values;

	if (elemtype != INT8OID && elemtype != INT4OID && elemtype != XIDOID &&
		elemtype != OIDOID && elemtype != BOOLOID &&
		elemtype != TIMESTAMPTZOID && elemtype != CHAROID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a batch packs arrays of bigint, integer, xid, oid, boolean, timestamptz or \"char\", not of %s",
						format_type_be(elemtype))));
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("pgsentinel_pack() packs one-dimensional arrays")));
	if (ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)) > PGS_RING_MAX_ENTRIES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pgsentinel_pack() packs at most %d elements, not %d",
						PGS_RING_MAX_ENTRIES, ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a))),
				 errhint("That is the most rows an archive batch can have: pgsentinel_unpack() refuses more.")));
	get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
	deconstruct_array(a, elemtype, elmlen, elmbyval, elmalign,
					  &elems, &elemnulls, &n);
	values = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
		values[i] = elemnulls[i] ? 0 : element_int64(elems[i], elemtype);
	pgs_pack_values(buf, values, elemnulls, n, context);
	pfree(values);
}

/*
 * SQL function pgsentinel_pack(bigint[] | integer[] | xid[]): the array
 * packed (above); NULL for NULL.
 */
Datum
pgsentinel_pack(PG_FUNCTION_ARGS)
{
	StringInfoData buf;
	bytea	   *result;

	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	pgs_pack_array(&buf, PG_GETARG_ARRAYTYPE_P(0), NULL);
	result = (bytea *) buf.data;
	SET_VARSIZE(result, buf.len);
	PG_RETURN_BYTEA_P(result);
}

/*
 * SQL function pgsentinel_unpack(bytea): the bigint[] a packed array
 * holds (xids and integers read back as bigint).  The array is written in
 * place, its NULLs as the input's bitmap (the same layout as an array's):
 * it takes no more memory than the result.
 */
Datum
pgsentinel_unpack(PG_FUNCTION_ARGS)
{
	bytea	   *packed = PG_GETARG_BYTEA_PP(0);
	PgsPackedReader r;
	ArrayType  *result;
	int64	   *data;
	int32		dataoffset = 0;
	Size		size;
	int			k = 0;

	if (pgs_packed_begin(&r, packed) == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));
	if (r.bitmap != NULL)
	{
		dataoffset = ARR_OVERHEAD_WITHNULLS(1, r.n);
		size = dataoffset + r.values * sizeof(int64);
	}
	else
		size = ARR_OVERHEAD_NONULLS(1) + r.values * sizeof(int64);
	result = (ArrayType *) palloc0(size);
	SET_VARSIZE(result, size);
	result->ndim = 1;
	result->dataoffset = dataoffset;
	result->elemtype = INT8OID;
	ARR_DIMS(result)[0] = r.n;
	ARR_LBOUND(result)[0] = 1;
	if (r.bitmap != NULL)
	{
		bits8	   *nullmap = ARR_NULLBITMAP(result);

		memcpy(nullmap, r.bitmap, (r.n + 7) / 8);
		if (r.n % 8 != 0)
			nullmap[r.n / 8] &= (1 << (r.n % 8)) - 1;
	}
	data = (int64 *) ARR_DATA_PTR(result);
	for (int i = 0; i < r.n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (pgs_packed_next(&r, &data[k]))
			k++;
	}
	Assert(k == r.values);
	PG_RETURN_ARRAYTYPE_P(result);
}
