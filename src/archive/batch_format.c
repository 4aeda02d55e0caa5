/*-------------------------------------------------------------------------
 *
 * batch_format.c
 *		The rows of an archive batch as one versioned payload: written by
 *		pgsentinel_batch_pack(), read by pgsentinel_batch_rows()
 *		(batch_rows.c), cut by pgsentinel_batch_keep() (a fleet's landing of
 *		a batch it has part of).  Nothing else knows the format: the
 *		archive's writer hands the columns in, its readers get rows out, and
 *		the fleet moves payloads between servers without reading them.
 *
 * The payload (a bytea), format 1:
 *   - one byte: the format number (PGS_BATCH_FORMAT); a reader refuses
 *     another, with a hint to update the extension;
 *   - one byte: how the body is stored: BODY_STORED as is, BODY_ZSTD
 *     compressed by zstd (one frame; the column is stored without TOAST
 *     compression: 30_archive.sql);
 *   - the body's length (a varint, as packed_ints.c writes them);
 *   - the body.
 * The body: the number of columns (a varint, PGS_BATCH_ROW_COLUMNS: the
 * row columns of 30_archive.sql, in its order), then each column: its kind
 * (a byte: PgsBatchColumnKind), its length in bytes (a varint) and its
 * bytes.  An integer column is packed (packed_ints.c); a text column is
 * its element count (a varint) and, for each element, its length plus one
 * (a varint; 0 for NULL) and its bytes, in the server's encoding.  A
 * column whose elements are all NULL may be absent (no bytes).  A row
 * column has an element per row, in the rows' order (30_archive.sql).
 *
 * The reader trusts nothing (a fleet's tables are written by its
 * sources): every length is checked against the bytes there are before it
 * is used, a compressed body must expand to exactly the length it claims
 * (at most MaxAllocSize, as any bytea), a text is checked to be valid in
 * the server's encoding, and an unknown format, kind or column count is an
 * error.
 *
 * zstd, not pglz or lz4: on the rows of pgbench read-write at a sample a
 * second, a minute's payload takes 242 B a sample with pglz, 269 with lz4,
 * 207 with zstd at level 3 and 184 at level 19, which compresses such a
 * payload (38 kB) in 11 ms (bench/compressors.py, bench/REPORT.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "archive/archive.h"
#include "guc.h"

PG_FUNCTION_INFO_V1(pgsentinel_batch_pack);
PG_FUNCTION_INFO_V1(pgsentinel_batch_keep);
PG_FUNCTION_INFO_V1(pgsentinel_batch_format);

#define BODY_STORED		0
#define BODY_ZSTD		2

/*
 * zstd's level: its highest below 4 MB of body (a minute of a busy
 * server's rows is tens of kB), a faster one above (an archiver catching
 * up after hours).
 */
#define ZSTD_LEVEL_SMALL	19
#define ZSTD_LEVEL_LARGE	9
#define ZSTD_LARGE_BODY		(4 * 1024 * 1024)

/* The kind of each row column in format 1 (30_archive.sql's order). */
static const PgsBatchColumnKind column_kinds[PGS_BATCH_ROW_COLUMNS] = {
	PGS_BATCH_PACKED,			/* row_samples */
	PGS_BATCH_PACKED,			/* session_ids */
	PGS_BATCH_PACKED,			/* wait_event_ids */
	PGS_BATCH_TEXTS,			/* states */
	PGS_BATCH_PACKED,			/* xact_us */
	PGS_BATCH_PACKED,			/* query_us */
	PGS_BATCH_PACKED,			/* change_us */
	PGS_BATCH_PACKED,			/* backend_xids */
	PGS_BATCH_PACKED,			/* backend_xmins */
	PGS_BATCH_PACKED,			/* top_level_query_ids */
	PGS_BATCH_TEXTS,			/* top_level_query_values */
	PGS_BATCH_PACKED,			/* query_ids */
	PGS_BATCH_TEXTS,			/* query_values */
	PGS_BATCH_TEXTS,			/* cmdtypes */
	PGS_BATCH_PACKED,			/* queryids */
	PGS_BATCH_PACKED,			/* nested_queryids */
	PGS_BATCH_PACKED,			/* blockers */
	PGS_BATCH_PACKED,			/* blockerpids */
	PGS_BATCH_TEXTS,			/* blocker_states */
	PGS_BATCH_PACKED,			/* blocker_usesysids */
	PGS_BATCH_TEXTS,			/* blocking_pids */
};

static void
corrupt(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("archive batch payload is corrupt: %s", why),
			 errhint("The rows of an archive batch are written by pgsentinel_batch_pack(); these bytes were not.")));
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
		if (shift == 63 && b > 1)
			corrupt("a number is longer than 64 bits");
		u |= (uint64) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
			return u;
	}
	corrupt("a number is longer than 64 bits");
	return 0;					/* not reached */
}

/* A length read at *p that the bytes left can hold. */
static int
get_length(const unsigned char **p, const unsigned char *end)
{
	uint64		len = get_varint(p, end);

	if (len > (uint64) (end - *p))
		corrupt("a length is larger than the bytes that follow");
	return (int) len;
}

/*
 * Open a payload: check its format, expand its body, and point cols[i] at
 * the bytes of row column i.  The body is checked to hold exactly its
 * columns; each column's own bytes are checked by its reader.
 */
void
pgs_batch_open(bytea *payload, PgsBatchColumnBytes *cols)
{
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(payload);
	const unsigned char *end = p + VARSIZE_ANY_EXHDR(payload);
	const unsigned char *body;
	const unsigned char *body_end;
	uint64		raw_len;
	int			method;
	uint64		ncols;

	if (end - p < 2)
		corrupt("it is shorter than its header");
	if (p[0] != PGS_BATCH_FORMAT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive batch format %d is not supported by this version of pgsentinel (it reads format %d)",
						p[0], PGS_BATCH_FORMAT),
				 errhint("The batch was written by another version of pgsentinel: update the extension on this server (ALTER EXTENSION pgsentinel UPDATE) to the version of the server that wrote it.")));
	method = p[1];
	p += 2;
	raw_len = get_varint(&p, end);
	if (method == BODY_STORED)
	{
		if (raw_len != (uint64) (end - p))
			corrupt("its body's length is not its length");
		body = p;
	}
	else if (method == BODY_ZSTD)
	{
		char	   *raw;
		size_t		got;

		if (raw_len >= MaxAllocSize ||
			ZSTD_getFrameContentSize(p, end - p) != (unsigned long long) raw_len)
			corrupt("its compressed body does not claim its length");
		raw = palloc(raw_len + 1);
		got = ZSTD_decompress(raw, raw_len, p, end - p);
		if (ZSTD_isError(got) || got != raw_len)
			corrupt("its compressed body does not expand to its length");
		body = (const unsigned char *) raw;
	}
	else
		corrupt("its body is stored in an unknown way");
	body_end = body + raw_len;

	ncols = get_varint(&body, body_end);
	if (ncols != PGS_BATCH_ROW_COLUMNS)
		corrupt("it has not the columns of its format");
	for (int i = 0; i < PGS_BATCH_ROW_COLUMNS; i++)
	{
		int			kind;

		if (body >= body_end)
			corrupt("a column is missing");
		kind = *body++;
		cols[i].len = get_length(&body, body_end);
		cols[i].data = (const char *) body;
		body += cols[i].len;
		if (kind == PGS_BATCH_ABSENT && cols[i].len == 0)
			cols[i].kind = PGS_BATCH_ABSENT;
		else if (kind == (int) column_kinds[i])
			cols[i].kind = column_kinds[i];
		else
			corrupt("a column is not of its kind");
	}
	if (body != body_end)
		corrupt("bytes are left after its last column");
}

/*
 * Begin reading a texts column: check every element's length (one pass,
 * nothing allocated).  Returns the element count.
 */
int
pgs_texts_begin(PgsTextsReader *r, const char *data, int len)
{
	const unsigned char *p = (const unsigned char *) data;
	const unsigned char *end = p + len;
	uint64		count;

	count = get_varint(&p, end);
	/* every element costs a byte at least */
	if (count > (uint64) (end - p))
		corrupt("a text column's count is larger than its bytes");
	r->p = p;
	r->end = end;
	r->n = (int) count;
	r->i = 0;
	for (uint64 i = 0; i < count; i++)
	{
		uint64		l = get_varint(&p, end);

		if (l > 0 && l - 1 > (uint64) (end - p))
			corrupt("a text is longer than the bytes that follow");
		if (l > 0)
			p += l - 1;
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	if (p != end)
		corrupt("bytes are left after a text column's last element");
	return r->n;
}

/*
 * The next element of a texts column: true and the text in *value (valid
 * in the server's encoding, or an error), or false for a NULL element and
 * past the end.
 */
bool
pgs_texts_next(PgsTextsReader *r, Datum *value)
{
	uint64		l;

	if (r->i >= r->n)
		return false;
	r->i++;
	l = get_varint(&r->p, r->end);
	if (l == 0)
		return false;
	(void) pg_verifymbstr((const char *) r->p, (int) (l - 1), false);
	*value = PointerGetDatum(cstring_to_text_with_len((const char *) r->p, (int) (l - 1)));
	r->p += l - 1;
	return true;
}

/* Append a texts element (NULL: isnull) to buf. */
static void
put_text(StringInfo buf, const char *s, int len, bool isnull)
{
	if (isnull)
		pgs_put_varint(buf, 0);
	else
	{
		pgs_put_varint(buf, (uint64) len + 1);
		appendBinaryStringInfo(buf, s, len);
	}
}

/* Append a column (kind and bytes) to the body. */
static void
put_column(StringInfo body, PgsBatchColumnKind kind, const char *data, int len)
{
	appendStringInfoChar(body, (char) kind);
	pgs_put_varint(body, (uint64) len);
	appendBinaryStringInfo(body, data, len);
}

/* A text[] argument as a texts column. */
static void
texts_of_array(StringInfo col, ArrayType *a)
{
	ArrayIterator it;
	Datum		d;
	bool		isnull;

	if (ARR_ELEMTYPE(a) != TEXTOID || ARR_NDIM(a) > 1)
		elog(ERROR, "pgsentinel_batch_pack: a text column is not a text[]");
	pgs_put_varint(col, (uint64) ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)));
	it = array_create_iterator(a, 0, NULL);
	while (array_iterate(it, &d, &isnull))
	{
		text	   *t = isnull ? NULL : DatumGetTextPP(d);

		put_text(col, isnull ? NULL : VARDATA_ANY(t),
				 isnull ? 0 : VARSIZE_ANY_EXHDR(t), isnull);
	}
	array_free_iterator(it);
}

/* The payload of a body: the header, the body compressed if that pays. */
static bytea *
payload_of_body(StringInfo body)
{
	StringInfoData out;
	bytea	   *result;
	size_t		bound = ZSTD_compressBound(body->len);
	char	   *compressed = palloc(bound);
	size_t		clen;
	bool		zstd;

	clen = ZSTD_compress(compressed, bound, body->data, body->len,
						 body->len < ZSTD_LARGE_BODY ? ZSTD_LEVEL_SMALL : ZSTD_LEVEL_LARGE);
	if (ZSTD_isError(clen))
		elog(ERROR, "zstd could not compress an archive batch: %s",
			 ZSTD_getErrorName(clen));
	zstd = clen < (size_t) body->len;
	initStringInfo(&out);
	appendStringInfoSpaces(&out, VARHDRSZ);
	appendStringInfoChar(&out, (char) PGS_BATCH_FORMAT);
	appendStringInfoChar(&out, (char) (zstd ? BODY_ZSTD : BODY_STORED));
	pgs_put_varint(&out, (uint64) body->len);
	if (zstd)
		appendBinaryStringInfo(&out, compressed, clen);
	else
		appendBinaryStringInfo(&out, body->data, body->len);
	pfree(compressed);
	result = (bytea *) out.data;
	SET_VARSIZE(result, out.len);
	return result;
}

/*
 * SQL function pgsentinel_batch_pack(the row columns of 30_archive.sql):
 * their payload.  An integer column comes packed (pgsentinel_pack()) or as
 * an array (packed here), a text column as text[]; a NULL argument is a
 * column of NULLs.
 */
Datum
pgsentinel_batch_pack(PG_FUNCTION_ARGS)
{
	StringInfoData body;
	StringInfoData col;

	if (PG_NARGS() != PGS_BATCH_ROW_COLUMNS)
		elog(ERROR, "pgsentinel_batch_pack: declared with %d arguments, not %d",
			 PG_NARGS(), PGS_BATCH_ROW_COLUMNS);
	initStringInfo(&body);
	initStringInfo(&col);
	pgs_put_varint(&body, PGS_BATCH_ROW_COLUMNS);
	for (int i = 0; i < PGS_BATCH_ROW_COLUMNS; i++)
	{
		Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, i);

		resetStringInfo(&col);
		if (PG_ARGISNULL(i))
		{
			put_column(&body, PGS_BATCH_ABSENT, NULL, 0);
			continue;
		}
		if (column_kinds[i] == PGS_BATCH_TEXTS)
			texts_of_array(&col, PG_GETARG_ARRAYTYPE_P(i));
		else if (argtype == BYTEAOID)
		{
			bytea	   *packed = PG_GETARG_BYTEA_PP(i);
			PgsPackedReader r;

			/* what pgsentinel_pack() wrote, or an error now, not when read */
			(void) pgs_packed_begin(&r, packed);
			appendBinaryStringInfo(&col, VARDATA_ANY(packed), VARSIZE_ANY_EXHDR(packed));
		}
		else
			pgs_pack_array(&col, PG_GETARG_ARRAYTYPE_P(i));
		put_column(&body, column_kinds[i], col.data, col.len);
	}
	PG_RETURN_BYTEA_P(payload_of_body(&body));
}

/*
 * SQL function pgsentinel_batch_keep(payload, sample_map integer[]): the
 * payload of the rows whose sample is kept, with their samples renumbered:
 * a row of sample i (1-based) is kept as a row of sample_map[i] when that
 * is not NULL; the others are left out (a fleet's landing of a batch it
 * has the first samples of: 51_fleet_logical.sql).
 */
Datum
pgsentinel_batch_keep(PG_FUNCTION_ARGS)
{
	bytea	   *payload = PG_GETARG_BYTEA_PP(0);
	ArrayType  *map = PG_GETARG_ARRAYTYPE_P(1);
	PgsBatchColumnBytes cols[PGS_BATCH_ROW_COLUMNS];
	PgsPackedReader packed[PGS_BATCH_ROW_COLUMNS];
	PgsTextsReader texts[PGS_BATCH_ROW_COLUMNS];
	int64	   *values[PGS_BATCH_ROW_COLUMNS];
	bool	   *nulls[PGS_BATCH_ROW_COLUMNS];
	StringInfoData out_texts[PGS_BATCH_ROW_COLUMNS];
	int			n[PGS_BATCH_ROW_COLUMNS];
	Datum	   *map_elems;
	bool	   *map_nulls;
	int			map_n;
	int			nrows = 0;
	int			kept = 0;
	StringInfoData body;
	StringInfoData col;

	if (ARR_ELEMTYPE(map) != INT4OID || ARR_NDIM(map) > 1)
		elog(ERROR, "pgsentinel_batch_keep: the sample map is not an integer[]");
	deconstruct_array(map, INT4OID, 4, true, TYPALIGN_INT,
					  &map_elems, &map_nulls, &map_n);
	pgs_batch_open(payload, cols);
	for (int i = 0; i < PGS_BATCH_ROW_COLUMNS; i++)
	{
		n[i] = 0;
		if (cols[i].kind == PGS_BATCH_PACKED)
			n[i] = pgs_packed_begin_bytes(&packed[i], cols[i].data, cols[i].len);
		else if (cols[i].kind == PGS_BATCH_TEXTS)
			n[i] = pgs_texts_begin(&texts[i], cols[i].data, cols[i].len);
		nrows = Max(nrows, n[i]);
	}
	for (int i = 0; i < PGS_BATCH_ROW_COLUMNS; i++)
	{
		values[i] = palloc(sizeof(int64) * Max(nrows, 1));
		nulls[i] = palloc(sizeof(bool) * Max(nrows, 1));
		initStringInfo(&out_texts[i]);
	}

	for (int j = 0; j < nrows; j++)
	{
		int64		v[PGS_BATCH_ROW_COLUMNS];
		bool		have[PGS_BATCH_ROW_COLUMNS];
		const unsigned char *text_at[PGS_BATCH_ROW_COLUMNS];
		int			text_len[PGS_BATCH_ROW_COLUMNS];
		int			to = 0;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < PGS_BATCH_ROW_COLUMNS; i++)
		{
			have[i] = false;
			if (j >= n[i])
				continue;
			if (cols[i].kind == PGS_BATCH_PACKED)
				have[i] = pgs_packed_next(&packed[i], &v[i]);
			else if (cols[i].kind == PGS_BATCH_TEXTS)
			{
				uint64		l = get_varint(&texts[i].p, texts[i].end);

				texts[i].i++;
				have[i] = l > 0;
				text_at[i] = texts[i].p;
				text_len[i] = have[i] ? (int) (l - 1) : 0;
				texts[i].p += text_len[i];
			}
		}
		/* row_samples is column 0 */
		if (have[0] && v[0] >= 1 && v[0] <= map_n && !map_nulls[v[0] - 1])
			to = DatumGetInt32(map_elems[v[0] - 1]);
		if (to <= 0)
			continue;
		v[0] = to;
		for (int i = 0; i < PGS_BATCH_ROW_COLUMNS; i++)
		{
			if (column_kinds[i] == PGS_BATCH_TEXTS)
				put_text(&out_texts[i], (const char *) text_at[i], text_len[i], !have[i]);
			else
			{
				values[i][kept] = have[i] ? v[i] : 0;
				nulls[i][kept] = !have[i];
			}
		}
		kept++;
	}

	initStringInfo(&body);
	initStringInfo(&col);
	pgs_put_varint(&body, PGS_BATCH_ROW_COLUMNS);
	for (int i = 0; i < PGS_BATCH_ROW_COLUMNS; i++)
	{
		resetStringInfo(&col);
		if (cols[i].kind == PGS_BATCH_ABSENT)
		{
			put_column(&body, PGS_BATCH_ABSENT, NULL, 0);
			continue;
		}
		if (column_kinds[i] == PGS_BATCH_TEXTS)
		{
			pgs_put_varint(&col, (uint64) kept);
			appendBinaryStringInfo(&col, out_texts[i].data, out_texts[i].len);
		}
		else
			pgs_pack_values(&col, values[i], nulls[i], kept);
		put_column(&body, column_kinds[i], col.data, col.len);
	}
	PG_RETURN_BYTEA_P(payload_of_body(&body));
}

/*
 * SQL function pgsentinel_batch_format(payload): its format number, or an
 * error if this version cannot read it or its columns are not what
 * pgsentinel_batch_pack() writes (the fleet checks a batch before it
 * lands; the texts' encoding is checked as they are read).
 */
Datum
pgsentinel_batch_format(PG_FUNCTION_ARGS)
{
	PgsBatchColumnBytes cols[PGS_BATCH_ROW_COLUMNS];

	pgs_batch_open(PG_GETARG_BYTEA_PP(0), cols);
	for (int i = 0; i < PGS_BATCH_ROW_COLUMNS; i++)
	{
		PgsPackedReader packed;
		PgsTextsReader texts;

		if (cols[i].kind == PGS_BATCH_PACKED)
			(void) pgs_packed_begin_bytes(&packed, cols[i].data, cols[i].len);
		else if (cols[i].kind == PGS_BATCH_TEXTS)
			(void) pgs_texts_begin(&texts, cols[i].data, cols[i].len);
	}
	PG_RETURN_INT32(PGS_BATCH_FORMAT);
}
