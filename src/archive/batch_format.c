/*-------------------------------------------------------------------------
 *
 * batch_format.c
 *		The rows of an archive batch as one versioned payload: the session
 *		rows of pgsentinel_archive_batch (written by pgsentinel_batch_pack(),
 *		read by pgsentinel_batch_rows() in batch_rows.c), the statement
 *		readings of pgsentinel_archive_statement_batch (written by
 *		pgsentinel_statement_batch_pack(), read by
 *		pgsentinel_statement_rows() in statement_rows.c) and the minute
 *		rollups (pgsentinel_rollup_*minute_batch, written by
 *		pgsentinel_*minute_pack(), read by rollup_rows.c); cut to what a
 *		fleet lands of a batch it has part of (pgsentinel_batch_keep(),
 *		pgsentinel_statement_batch_keep()).  Nothing else knows the format:
 *		the archive's writer hands the columns in, its readers get rows out,
 *		and the fleet moves payloads between servers without reading them.
 *
 * The payload (a bytea), format 1:
 *   - one byte: the format number (PGS_BATCH_FORMAT); a reader refuses
 *     another, with a hint to update the extension;
 *   - one byte: how the body is stored: BODY_STORED as is, BODY_ZSTD
 *     compressed by zstd (one frame; the column is stored without TOAST
 *     compression: 30_archive.sql);
 *   - the body's length (a varint, as packed_ints.c writes them);
 *   - the body.
 * The body: the number of columns (a varint: that of its layout, below),
 * then each column: its kind (a byte: PgsBatchColumnKind), its length in
 * bytes (a varint) and its bytes.  An integer (or boolean, as 0 and 1)
 * column is packed (packed_ints.c); a text column is its element count (a
 * varint) and, for each element, its length plus one (a varint; 0 for
 * NULL) and its bytes, in the server's encoding, or, stored as ids (kind
 * PGS_BATCH_TEXT_IDS, where that compresses shorter: TextsWriter),
 * the count of its distinct texts, each's length and bytes, and then a
 * packed array of each element's id (0 for the first distinct text, NULL
 * for NULL), or, stored with its numbers cut out (kind
 * PGS_BATCH_TEXT_NUMBERS), the same of its texts with their numbers
 * replaced by marks, the ids' packed array after its length, and the
 * numbers by position (TextsWriter); a double precision column
 * is its element count (a varint), a byte saying whether a bitmap of the
 * elements that are not NULL follows (as packed_ints.c's), and the 8 bytes
 * of each element that is not NULL, little-endian, or, where every element
 * is a whole number (kind PGS_BATCH_FLOAT8_INTEGERS: sample weights and
 * their sums), the elements packed as integers.  A column whose
 * elements are all NULL may be absent (no bytes).  A column has an element
 * per row, in the rows' order.  The layouts (src/columns.txt): the session
 * rows' columns ([row_data], 21 in its first version), the statement
 * readings' ([reading_data], 20), the minute rollups' ([minute_data],
 * [session_minute_data], [blocking_minute_data]).  An integer column may
 * hold times (their microseconds) and "char"s (their byte).
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

#include <math.h>
#include <zstd.h>

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "archive/archive.h"
#include "guc.h"

PG_FUNCTION_INFO_V1(pgsentinel_batch_pack);
PG_FUNCTION_INFO_V1(pgsentinel_sample_pack);
PG_FUNCTION_INFO_V1(pgsentinel_statement_batch_pack);
PG_FUNCTION_INFO_V1(pgsentinel_minute_pack);
PG_FUNCTION_INFO_V1(pgsentinel_session_minute_pack);
PG_FUNCTION_INFO_V1(pgsentinel_blocking_minute_pack);
PG_FUNCTION_INFO_V1(pgsentinel_batch_keep);
PG_FUNCTION_INFO_V1(pgsentinel_statement_batch_keep);
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

/* The most distinct texts a column stored as ids has (TextsWriter). */
#define TEXT_IDS_MAX				4096

/*
 * A texts column stored with its numbers cut out (PGS_BATCH_TEXT_NUMBERS):
 * in each distinct text, NUMBER_ESCAPE then NUMBER_MARK stands for a
 * number, NUMBER_ESCAPE twice for that byte of the text.  A number is a
 * run of digits that reads back as itself (no leading zero, at most
 * TEXT_NUMBERS_MAX_DIGITS of them); a text's first
 * TEXT_NUMBERS_MAX_POSITIONS such runs are cut out, the rest kept.
 */
#define NUMBER_ESCAPE				'\x01'
#define NUMBER_MARK					'\x02'
#define TEXT_NUMBERS_MAX_POSITIONS	64
#define TEXT_NUMBERS_MAX_DIGITS		18
#define TEXT_NUMBERS_MAX_VALUE		INT64CONST(999999999999999999)

/*
 * The largest whole number a double precision column stores as an integer
 * (PGS_BATCH_FLOAT8_INTEGERS): 2^53, up to which a double holds every one.
 */
#define FLOAT8_WHOLE_MAX			(INT64CONST(1) << 53)

/* How the payload stores each column (src/columns.txt). */
static const PgsBatchColumnKind rows_kinds[] = {PGS_ROW_DATA_COLUMN_KINDS};
static const PgsBatchColumnKind readings_kinds[] = {PGS_READING_DATA_COLUMN_KINDS};
static const PgsBatchColumnKind minute_kinds[] = {PGS_MINUTE_DATA_COLUMN_KINDS};
static const PgsBatchColumnKind session_minute_kinds[] = {PGS_SESSION_MINUTE_DATA_COLUMN_KINDS};
static const PgsBatchColumnKind blocking_kinds[] = {PGS_BLOCKING_MINUTE_DATA_COLUMN_KINDS};
static const PgsBatchColumnKind samples_kinds[] = {PGS_SAMPLE_DATA_COLUMN_KINDS};
StaticAssertDecl(PGS_MINUTE_DATA_COLS <= PGS_BATCH_MAX_COLUMNS &&
				 PGS_SESSION_MINUTE_DATA_COLS <= PGS_BATCH_MAX_COLUMNS,
				 "a payload has at most PGS_BATCH_MAX_COLUMNS columns");

StaticAssertDecl(lengthof(rows_kinds) == PGS_BATCH_ROW_COLUMNS,
				 "the session rows' layout");
StaticAssertDecl(lengthof(readings_kinds) == PGS_BATCH_READING_COLUMNS,
				 "the statement readings' layout");

/*
 * Each layout's first version's column count: no payload has fewer.  A
 * payload is told to be of rows or readings by its count when the caller
 * does not say (pgsentinel_batch_format(), of NULL): the readings must
 * stay fewer than the rows' first count.
 */
#define ROWS_FIRST_COLUMNS		21
#define READINGS_FIRST_COLUMNS	20
StaticAssertDecl(PGS_BATCH_READING_COLUMNS < ROWS_FIRST_COLUMNS,
				 "a payload's column count tells rows from readings");

const PgsBatchLayout pgs_rows_layout = {
	PGS_BATCH_ROW_COLUMNS, ROWS_FIRST_COLUMNS, rows_kinds
};
const PgsBatchLayout pgs_readings_layout = {
	PGS_BATCH_READING_COLUMNS, READINGS_FIRST_COLUMNS, readings_kinds
};
/* (the minute rollups: only a reader that knows it reads one) */
const PgsBatchLayout pgs_minute_layout = {
	PGS_MINUTE_DATA_COLS, PGS_MINUTE_DATA_COLS, minute_kinds
};
const PgsBatchLayout pgs_session_minute_layout = {
	PGS_SESSION_MINUTE_DATA_COLS, PGS_SESSION_MINUTE_DATA_COLS, session_minute_kinds
};
const PgsBatchLayout pgs_blocking_minute_layout = {
	PGS_BLOCKING_MINUTE_DATA_COLS, PGS_BLOCKING_MINUTE_DATA_COLS, blocking_kinds
};
/* (a batch's samples: only a reader that knows it reads them) */
const PgsBatchLayout pgs_samples_layout = {
	PGS_SAMPLE_DATA_COLS, PGS_SAMPLE_DATA_COLS, samples_kinds
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
	uint64		u;
	const char *why = pgs_get_varint(p, end, &u);

	if (why != NULL)
		corrupt(why);
	return u;
}

/*
 * Refuse a column of more elements than a batch has rows at most (the
 * rows of one ring), before anything is allocated for them.
 */
static void
check_elements(uint64 count)
{
	if (count > PGS_RING_MAX_ENTRIES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("archive batch column has %llu elements, more than an archive batch can have (%d)",
						(unsigned long long) count, PGS_RING_MAX_ENTRIES),
				 errhint("A batch holds at most the rows of one ring (pgsentinel_ash.max_entries and pgsentinel_pgssh.max_entries are at most %d).",
						 PGS_RING_MAX_ENTRIES)));
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
 * Check a payload's format and expand its body: *body, *body_end.  The
 * body is in memory of its own, or in the payload.
 */
static void
expand_body(bytea *payload, const unsigned char **body,
			const unsigned char **body_end)
{
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(payload);
	const unsigned char *end = p + VARSIZE_ANY_EXHDR(payload);
	uint64		raw_len;
	int			method;

	if (end - p < 1)
		corrupt("it is empty");
	if (p[0] != PGS_BATCH_FORMAT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive batch format %d is not supported by this version of pgsentinel (it reads format %d)",
						p[0], PGS_BATCH_FORMAT),
				 errhint("The batch was written by another version of pgsentinel: update the extension on this server (ALTER EXTENSION pgsentinel UPDATE) to the version of the server that wrote it.")));
	if (end - p < 2)
		corrupt("it is shorter than its header");
	method = p[1];
	p += 2;
	raw_len = get_varint(&p, end);
	if (method == BODY_STORED)
	{
		if (raw_len != (uint64) (end - p))
			corrupt("its body's length is not its length");
		*body = p;
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
		*body = (const unsigned char *) raw;
	}
	else
		corrupt("its body is stored in an unknown way");
	*body_end = *body + raw_len;
}

/*
 * Point cols[i] at the bytes of column i of a body of ncols columns (after
 * its column count) of the layout; each column's own bytes are checked by
 * its reader.  A layout's new columns are added at its end
 * (src/columns.txt): a payload written before one was added has fewer
 * columns, and those it lacks read as absent (NULL).  One with more was
 * written by a newer pgsentinel, whose columns this one would drop:
 * refused.
 */
static void
split_columns(const unsigned char *body, const unsigned char *body_end,
			  uint64 ncols, const PgsBatchLayout *layout,
			  PgsBatchColumnBytes *cols)
{
	if (ncols > (uint64) layout->ncols)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive batch has %llu columns, more than this version of pgsentinel reads (%d)",
						(unsigned long long) ncols, layout->ncols),
				 errhint("The batch was written by a newer version of pgsentinel: update the extension on this server (ALTER EXTENSION pgsentinel UPDATE) to the version of the server that wrote it.")));
	if (ncols < (uint64) layout->min_ncols)
		corrupt("it has fewer columns than its format");
	for (int i = (int) ncols; i < layout->ncols; i++)
	{
		cols[i].kind = PGS_BATCH_ABSENT;
		cols[i].stored = PGS_BATCH_ABSENT;
		cols[i].data = NULL;
		cols[i].len = 0;
	}
	for (int i = 0; i < (int) ncols; i++)
	{
		int			kind;

		if (body >= body_end)
			corrupt("a column is missing");
		kind = *body++;
		cols[i].len = get_length(&body, body_end);
		cols[i].data = (const char *) body;
		cols[i].stored = (PgsBatchColumnKind) kind;
		body += cols[i].len;
		if (kind == PGS_BATCH_ABSENT && cols[i].len == 0)
			cols[i].kind = PGS_BATCH_ABSENT;
		else if (kind == (int) layout->kinds[i])
			cols[i].kind = layout->kinds[i];
		else if ((kind == PGS_BATCH_TEXT_IDS || kind == PGS_BATCH_TEXT_NUMBERS) &&
				 layout->kinds[i] == PGS_BATCH_TEXTS)
			cols[i].kind = PGS_BATCH_TEXTS;
		else if (kind == PGS_BATCH_FLOAT8_INTEGERS &&
				 layout->kinds[i] == PGS_BATCH_FLOAT8)
			cols[i].kind = PGS_BATCH_FLOAT8;
		else if (kind > PGS_BATCH_LAST_KIND)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("archive batch column %d is stored in a way this version of pgsentinel does not read (kind %d)",
							i + 1, kind),
					 errhint("The batch was written by a newer version of pgsentinel: update the extension on this server (ALTER EXTENSION pgsentinel UPDATE) to the version of the server that wrote it.")));
		else
			corrupt("a column is not of its kind");
	}
	if (body != body_end)
		corrupt("bytes are left after its last column");
}

/*
 * Open a payload of the layout: check its format, expand its body, and
 * point cols[i] at the bytes of its column i (split_columns()).
 */
void
pgs_batch_open(bytea *payload, const PgsBatchLayout *layout,
			   PgsBatchColumnBytes *cols)
{
	const unsigned char *body;
	const unsigned char *body_end;
	uint64		ncols;

	expand_body(payload, &body, &body_end);
	ncols = get_varint(&body, body_end);
	split_columns(body, body_end, ncols, layout, cols);
}

/*
 * The numbers a distinct text of a PGS_BATCH_TEXT_NUMBERS column stands
 * for (its marks), checking its escapes; its length once made, numbers
 * aside, in *len.
 */
static int
count_number_marks(const char *s, int slen, int *len)
{
	int			marks = 0;

	*len = 0;
	for (int i = 0; i < slen; i++)
	{
		if (s[i] == NUMBER_ESCAPE)
		{
			if (i + 1 >= slen ||
				(s[i + 1] != NUMBER_ESCAPE && s[i + 1] != NUMBER_MARK))
				corrupt("a text with its numbers cut out has an unknown escape");
			if (s[++i] == NUMBER_MARK)
			{
				marks++;
				continue;
			}
		}
		(*len)++;
	}
	return marks;
}

/*
 * Begin reading a texts column: check every element's length; or, for a
 * column stored as ids, every distinct text's length and encoding, and
 * every id: that it names one of them, and that the texts the ids name
 * add up to no more than a column of texts can hold (MaxAllocSize), as
 * they would stored as texts: a few bytes of ids never stand for more.
 * Stored with its numbers cut out, also each distinct text's escapes, and
 * that each position's numbers are as many as the texts' marks there (a
 * number counted at its most digits in that sum).  Only the distinct
 * texts' places and the positions' readers are allocated.  Returns the
 * element count.
 */
int
pgs_texts_begin(PgsTextsReader *r, const PgsBatchColumnBytes *col)
{
	const unsigned char *p = (const unsigned char *) col->data;
	const unsigned char *end = p + col->len;
	uint64		count;

	memset(r, 0, sizeof(*r));
	r->stored = col->stored;
	count = get_varint(&p, end);
	/* every element (or distinct text) costs a byte at least */
	if (count > (uint64) (end - p))
		corrupt("a text column's count is larger than its bytes");
	check_elements(count);
	if (col->stored == PGS_BATCH_TEXT_IDS || col->stored == PGS_BATCH_TEXT_NUMBERS)
	{
		bool		numbers = (col->stored == PGS_BATCH_TEXT_NUMBERS);
		PgsPackedReader ids;
		int64		id;
		uint64		named = 0;
		int		   *marks = NULL;
		int		   *made_len = NULL;
		int64		need[TEXT_NUMBERS_MAX_POSITIONS] = {0};
		const unsigned char *ids_end = end;

		/* (no writer makes more: a few bytes must not allocate more) */
		if (count > TEXT_IDS_MAX)
			corrupt("a text column has more distinct texts than a column stored as ids");
		r->ndistinct = (int) count;
		r->distinct = palloc(sizeof(char *) * Max(count, 1));
		r->distinct_len = palloc(sizeof(int) * Max(count, 1));
		if (numbers)
		{
			marks = palloc(sizeof(int) * Max(count, 1));
			made_len = palloc(sizeof(int) * Max(count, 1));
		}
		for (uint64 i = 0; i < count; i++)
		{
			r->distinct_len[i] = get_length(&p, end);
			r->distinct[i] = (const char *) p;
			(void) pg_verifymbstr(r->distinct[i], r->distinct_len[i], false);
			if (numbers)
			{
				marks[i] = count_number_marks(r->distinct[i], r->distinct_len[i],
											  &made_len[i]);
				if (marks[i] > TEXT_NUMBERS_MAX_POSITIONS)
					corrupt("a text with its numbers cut out has too many of them");
			}
			p += r->distinct_len[i];
		}
		if (numbers)
		{
			int			ids_len = get_length(&p, end);

			ids_end = p + ids_len;
		}
		r->n = pgs_packed_begin_bytes(&ids, (const char *) p, (int) (ids_end - p));
		r->ids = ids;
		p = ids_end;
		if (numbers)
		{
			uint64		npositions = get_varint(&p, end);

			if (npositions > TEXT_NUMBERS_MAX_POSITIONS)
				corrupt("a text column has numbers at too many positions");
			r->npositions = (int) npositions;
			r->numbers = palloc(sizeof(PgsPackedReader) * Max(npositions, 1));
			for (int k = 0; k < r->npositions; k++)
			{
				int			len = get_length(&p, end);

				(void) pgs_packed_begin_bytes(&r->numbers[k], (const char *) p, len);
				p += len;
			}
			if (p != end)
				corrupt("bytes are left after a text column's numbers");
			initStringInfo(&r->made);
		}
		for (int i = 0; i < r->n; i++)
		{
			if ((i & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			if (!pgs_packed_next(&ids, &id))
				continue;
			if (id < 0 || id >= r->ndistinct)
				corrupt("a text's id names none of its column's texts");
			if (!numbers)
				named += r->distinct_len[id] + 1;
			else
			{
				named += made_len[id] + 1 +
					(uint64) marks[id] * TEXT_NUMBERS_MAX_DIGITS;
				for (int k = 0; k < marks[id]; k++)
					need[k]++;
			}
			if (named >= MaxAllocSize)
				corrupt("its texts stored as ids stand for more than a column can hold");
		}
		for (int k = 0; k < r->npositions; k++)
		{
			PgsPackedReader at_k = r->numbers[k];	/* a copy, read through */
			int64		v;

			if (need[k] != at_k.n || need[k] != at_k.values)
				corrupt("a text column's numbers are not as many as its texts' marks");
			for (int i = 0; i < at_k.n; i++)
			{
				if ((i & 0xFFFF) == 0)
					CHECK_FOR_INTERRUPTS();
				if (pgs_packed_next(&at_k, &v) &&
					(v < 0 || v > TEXT_NUMBERS_MAX_VALUE))
					corrupt("a number cut out of a text is out of range");
			}
		}
		for (int k = r->npositions; k < TEXT_NUMBERS_MAX_POSITIONS; k++)
			if (need[k] != 0)
				corrupt("a text column's numbers are not as many as its texts' marks");
		if (numbers)
		{
			pfree(marks);
			pfree(made_len);
		}
		return r->n;
	}
	r->p = p;
	r->end = end;
	r->n = (int) count;
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
 * A text of a PGS_BATCH_TEXT_NUMBERS column made whole in r->made: each
 * escaped byte as itself, each mark as its position's next number.
 */
static void
make_text_with_numbers(PgsTextsReader *r, const char *s, int len)
{
	const char *end = s + len;
	int			k = 0;

	resetStringInfo(&r->made);
	while (s < end)
	{
		const char *escape = memchr(s, NUMBER_ESCAPE, end - s);
		int64		v;

		if (escape == NULL)
		{
			appendBinaryStringInfo(&r->made, s, end - s);
			break;
		}
		appendBinaryStringInfo(&r->made, s, escape - s);
		/* (escapes and marks were checked by pgs_texts_begin()) */
		s = escape + 2;
		if (escape[1] == NUMBER_ESCAPE)
		{
			appendStringInfoChar(&r->made, NUMBER_ESCAPE);
			continue;
		}
		if (k >= r->npositions || !pgs_packed_next(&r->numbers[k], &v))
			corrupt("a text column's numbers are fewer than its texts' marks");
		if (v < 0 || v > TEXT_NUMBERS_MAX_VALUE)
			corrupt("a number cut out of a text is out of range");
		appendStringInfo(&r->made, INT64_FORMAT, v);
		k++;
	}
}

/*
 * The next element of a texts column: true and its bytes (in the
 * payload, not checked against the server's encoding), or false for a
 * NULL element and past the end.
 */
bool
pgs_texts_next_bytes(PgsTextsReader *r, const char **s, int *len)
{
	uint64		l;

	if (r->i >= r->n)
		return false;
	r->i++;
	if (r->stored == PGS_BATCH_TEXT_IDS || r->stored == PGS_BATCH_TEXT_NUMBERS)
	{
		int64		id;

		if (!pgs_packed_next(&r->ids, &id))
			return false;
		if (id < 0 || id >= r->ndistinct)
			corrupt("a text's id names none of its column's texts");
		*s = r->distinct[id];
		*len = r->distinct_len[id];
		if (r->stored == PGS_BATCH_TEXT_NUMBERS)
		{
			make_text_with_numbers(r, *s, *len);
			*s = r->made.data;
			*len = r->made.len;
		}
		return true;
	}
	l = get_varint(&r->p, r->end);
	if (l == 0)
		return false;
	*s = (const char *) r->p;
	*len = (int) (l - 1);
	r->p += l - 1;
	return true;
}

/*
 * The next element of a texts column: true and the text in *value (valid
 * in the server's encoding, or an error), or false for a NULL element and
 * past the end.
 */
bool
pgs_texts_next(PgsTextsReader *r, Datum *value)
{
	const char *s;
	int			len;

	if (!pgs_texts_next_bytes(r, &s, &len))
		return false;
	/*
	 * (the distinct texts of a column of ids were checked once; numbers put
	 * in for marks are ASCII, whole characters in every server encoding)
	 */
	if (r->stored == PGS_BATCH_TEXTS)
		(void) pg_verifymbstr(s, len, false);
	*value = PointerGetDatum(cstring_to_text_with_len(s, len));
	return true;
}

/*
 * Begin reading a double precision column: check its count, bitmap and
 * bytes (nothing allocated); stored as whole numbers
 * (PGS_BATCH_FLOAT8_INTEGERS), its packed integers, each of them one a
 * double holds exactly.  Returns the element count.
 */
int
pgs_floats_begin(PgsFloatsReader *r, const PgsBatchColumnBytes *col)
{
	const unsigned char *p = (const unsigned char *) col->data;
	const unsigned char *end = p + col->len;
	uint64		count;
	uint64		set;

	r->integers = (col->stored == PGS_BATCH_FLOAT8_INTEGERS);
	r->p = NULL;
	r->bitmap = NULL;
	r->i = 0;
	if (r->integers)
	{
		PgsPackedReader all;	/* a copy, read through */
		int64		v;

		r->n = pgs_packed_begin_bytes(&r->ints, col->data, col->len);
		check_elements(r->n);
		all = r->ints;
		for (int i = 0; i < r->n; i++)
		{
			if ((i & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			if (pgs_packed_next(&all, &v) &&
				(v < -FLOAT8_WHOLE_MAX || v > FLOAT8_WHOLE_MAX))
				corrupt("a whole number of a number column is out of range");
		}
		return r->n;
	}
	count = get_varint(&p, end);
	/* every element costs a bit at least */
	if (count > (uint64) (end - p) * 8)
		corrupt("a number column's count is larger than its bytes");
	check_elements(count);
	r->bitmap = NULL;
	set = count;
	if (count > 0)
	{
		if (p >= end)
			corrupt("a number column is cut short");
		if (*p > 1)
			corrupt("a number column's NULL flag is unknown");
		if (*p++ == 1)
		{
			if ((count + 7) / 8 > (uint64) (end - p))
				corrupt("a number column's bitmap is cut short");
			r->bitmap = p;
			set = pg_popcount((const char *) p, count / 8);
			if (count % 8 != 0)
				set += pg_number_of_ones[p[count / 8] & ((1 << (count % 8)) - 1)];
			p += (count + 7) / 8;
		}
	}
	if (set * 8 != (uint64) (end - p))
		corrupt("a number column's bytes are not its numbers'");
	r->p = p;
	r->n = (int) count;
	r->i = 0;
	return r->n;
}

/*
 * The next element of a double precision column: true and its value, or
 * false for a NULL element and past the end.
 */
bool
pgs_floats_next(PgsFloatsReader *r, uint64 *bits)
{
	int			i;
	uint64		u = 0;

	if (r->integers)
	{
		int64		v;
		float8		f;

		if (!pgs_packed_next(&r->ints, &v))
			return false;
		f = (float8) v;
		memcpy(bits, &f, sizeof(f));
		return true;
	}
	i = r->i;
	if (i >= r->n)
		return false;
	r->i++;
	if (r->bitmap != NULL && (r->bitmap[i / 8] & (1 << (i % 8))) == 0)
		return false;
	for (int b = 7; b >= 0; b--)
		u = (u << 8) | r->p[b];
	r->p += 8;
	*bits = u;
	return true;
}

/* pgs_floats_next(), the element as a float8 Datum. */
bool
pgs_floats_next_datum(PgsFloatsReader *r, Datum *value)
{
	uint64		bits;
	float8		f;

	if (!pgs_floats_next(r, &bits))
		return false;
	memcpy(&f, &bits, sizeof(f));
	*value = Float8GetDatum(f);
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

/*
 * A double precision column written one element at a time: element k's
 * bit in bitmap, its bytes (if not NULL) in bytes; *any_null set by a NULL.
 */
static void
put_float(StringInfo bitmap, StringInfo bytes, bool *any_null, int k,
		  uint64 bits, bool isnull)
{
	if (k % 8 == 0)
		appendStringInfoChar(bitmap, 0);
	if (isnull)
	{
		*any_null = true;
		return;
	}
	bitmap->data[k / 8] |= (char) (1 << (k % 8));
	for (int b = 0; b < 8; b++)
		appendStringInfoChar(bytes, (char) (bits >> (8 * b)));
}

/*
 * Append the n elements written by put_float() to buf as packed integers,
 * if each is a whole number a double holds exactly (not -0, NaN or an
 * infinity) and there is one: true then.  A column of sample weights or
 * of their sums takes a byte or two an element so, eight as doubles.
 */
static bool
end_floats_as_integers(StringInfo buf, StringInfo bitmap, StringInfo bytes,
					   bool any_null, int n, StringInfo body)
{
	int64	   *values;
	bool	   *nulls;
	int			k = 0;

	if (bytes->len == 0)
		return false;
	values = palloc(sizeof(int64) * n);
	nulls = palloc(sizeof(bool) * n);
	for (int i = 0; i < n; i++)
	{
		uint64		u = 0;
		float8		f;

		nulls[i] = any_null &&
			(((unsigned char) bitmap->data[i / 8]) & (1 << (i % 8))) == 0;
		values[i] = 0;
		if (nulls[i])
			continue;
		for (int b = 7; b >= 0; b--)
			u = (u << 8) | (unsigned char) bytes->data[8 * k + b];
		k++;
		memcpy(&f, &u, sizeof(f));
		if (!(f >= -(float8) FLOAT8_WHOLE_MAX && f <= (float8) FLOAT8_WHOLE_MAX) ||
			f != floor(f) || (f == 0 && signbit(f)))
		{
			pfree(values);
			pfree(nulls);
			return false;
		}
		values[i] = (int64) f;
	}
	pgs_pack_values(buf, values, nulls, n, body);
	pfree(values);
	pfree(nulls);
	return true;
}

/*
 * Append the n elements written by put_float() to buf, as a column of the
 * body; returns the kind it is stored as.
 */
static PgsBatchColumnKind
end_floats(StringInfo buf, StringInfo bitmap, StringInfo bytes, bool any_null, int n,
		   StringInfo body)
{
	if (end_floats_as_integers(buf, bitmap, bytes, any_null, n, body))
		return PGS_BATCH_FLOAT8_INTEGERS;
	pgs_put_varint(buf, (uint64) n);
	if (n == 0)
		return PGS_BATCH_FLOAT8;
	appendStringInfoChar(buf, any_null ? 1 : 0);
	if (any_null)
		appendBinaryStringInfo(buf, bitmap->data, bitmap->len);
	appendBinaryStringInfo(buf, bytes->data, bytes->len);
	return PGS_BATCH_FLOAT8;
}

/* Append a column (kind and bytes) to the body. */
static void
put_column(StringInfo body, PgsBatchColumnKind kind, const char *data, int len)
{
	appendStringInfoChar(body, (char) kind);
	pgs_put_varint(body, (uint64) len);
	appendBinaryStringInfo(body, data, len);
}

/* A column given as an array: of its type, one dimension, not too long. */
static void
check_argument_array(ArrayType *a, Oid elemtype)
{
	if (ARR_ELEMTYPE(a) != elemtype)
		elog(ERROR, "a batch's pack function got an array of the wrong type");
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("a batch's columns are one-dimensional arrays")));
	check_elements(ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)));
}

/*
 * A texts column written one element at a time (texts_write_*): as texts;
 * as ids into its distinct texts (PGS_BATCH_TEXT_IDS: their count, each's
 * length and bytes, then the elements' ids packed, NULL for NULL) while it
 * has few; and as ids into its distinct texts with their numbers cut out,
 * with the numbers (PGS_BATCH_TEXT_NUMBERS: the distinct texts so, the
 * length of the ids packed and the ids, then the count of positions and,
 * for each, the length of its numbers packed and the numbers: the k-th
 * number cut out of each text, in the rows' order).  At the end, the one
 * zstd's fastest level makes shortest is kept.
 *
 * A column of a few names repeated row after row (a state, a lock mode)
 * costs a match of zstd's a row as texts, a few bits a row as ids: under
 * pgbench read-write the rows' six such columns took 25 B a sample as
 * texts (bench/REPORT.md 6l).  A column of texts that differ by their
 * numbers (a lock's "transaction 8123", a statement's literal values, a
 * list of pids) is a few templates and columns of numbers, which zstd
 * finds as it finds any packed column: under pgbench read-write the rows'
 * payload took 14 % less, the blocking minute's 27 % (bench/REPORT.md
 * 6m).  Ids are given up past TEXT_IDS_MAX distinct texts or a long probe
 * of the table that finds them (texts from a fleet source may be made to
 * collide): what this takes grows with the texts written, as the texts'
 * bytes do.
 */
#define TEXT_IDS_SLOTS		(2 * TEXT_IDS_MAX)
#define TEXT_IDS_MAX_PROBE	64

/* A column's distinct texts and each element's id among them. */
typedef struct DistinctTexts
{
	bool		ok;				/* still few distinct texts */
	StringInfoData distinct;	/* their lengths and bytes, as stored */
	int			ndistinct;
	int			start[TEXT_IDS_MAX];	/* each's bytes in distinct */
	int			len[TEXT_IDS_MAX];
	int16		slot[TEXT_IDS_SLOTS];	/* a distinct text's id + 1, or 0 */
	PgsPackedWriter ids;
} DistinctTexts;

typedef struct TextsWriter
{
	StringInfoData texts;		/* the column as texts, but its count */
	int			n;
	DistinctTexts whole;		/* the texts as they are */
	bool		numbers_ok;		/* still cutting numbers out */
	DistinctTexts cut;			/* the texts with their numbers cut out */
	StringInfoData text_cut;	/* (the element being cut) */
	int			npositions;
	PgsPackedWriter numbers[TEXT_NUMBERS_MAX_POSITIONS];
	bool		any_number;
	uint64		named;			/* what the ids of cut would stand for, as
								 * pgs_texts_begin() counts it */
} TextsWriter;

static void
distinct_init(DistinctTexts *d)
{
	d->ok = true;
	initStringInfo(&d->distinct);
	d->ndistinct = 0;
	memset(d->slot, 0, sizeof(d->slot));
	pgs_packed_write_init(&d->ids);
}

/* Free what the ids took, and give them up. */
static void
distinct_give_up(DistinctTexts *d)
{
	if (!d->ok)
		return;
	d->ok = false;
	pfree(d->distinct.data);
	pgs_packed_write_free(&d->ids);
}

/* The id of a text among the distinct ones, added if new; -1: ids given up. */
static int
text_id(DistinctTexts *d, const char *s, int len)
{
	uint32		h = hash_bytes((const unsigned char *) s, len) % TEXT_IDS_SLOTS;

	for (int probe = 0; probe < TEXT_IDS_MAX_PROBE; probe++)
	{
		int			id = d->slot[h] - 1;

		if (id < 0)
		{
			if (d->ndistinct >= TEXT_IDS_MAX)
				return -1;
			id = d->ndistinct++;
			d->slot[h] = (int16) (id + 1);
			pgs_put_varint(&d->distinct, (uint64) len);
			d->start[id] = d->distinct.len;
			d->len[id] = len;
			appendBinaryStringInfo(&d->distinct, s, len);
			return id;
		}
		if (d->len[id] == len && memcmp(d->distinct.data + d->start[id], s, len) == 0)
			return id;
		h = (h + 1) % TEXT_IDS_SLOTS;
	}
	return -1;
}

/* Append an element's id (or NULL) to d, unless ids are given up. */
static void
distinct_write(DistinctTexts *d, const char *s, int len, bool isnull)
{
	int			id;

	if (!d->ok)
		return;
	if (isnull)
	{
		pgs_packed_write(&d->ids, 0, true);
		return;
	}
	id = text_id(d, s, len);
	if (id < 0)
		distinct_give_up(d);
	else
		pgs_packed_write(&d->ids, id, false);
}

/* d's distinct texts (their count, each's length and bytes) appended to buf. */
static void
distinct_put_texts(DistinctTexts *d, StringInfo buf)
{
	pgs_put_varint(buf, (uint64) d->ndistinct);
	appendBinaryStringInfo(buf, d->distinct.data, d->distinct.len);
}

static void
texts_write_init(TextsWriter *w)
{
	initStringInfo(&w->texts);
	w->n = 0;
	distinct_init(&w->whole);
	w->numbers_ok = true;
	distinct_init(&w->cut);
	initStringInfo(&w->text_cut);
	w->npositions = 0;
	w->any_number = false;
	w->named = 0;
}

/* Give up cutting numbers out: free what it took. */
static void
numbers_give_up(TextsWriter *w)
{
	if (!w->numbers_ok)
		return;
	w->numbers_ok = false;
	distinct_give_up(&w->cut);
	pfree(w->text_cut.data);
	for (int k = 0; k < w->npositions; k++)
		pgs_packed_write_free(&w->numbers[k]);
}

/*
 * Cut the numbers out of the len bytes at s into w->text_cut (escaped,
 * above), each number appended to its position's column.
 */
static void
cut_numbers(TextsWriter *w, const char *s, int len)
{
	int			k = 0;
	int			made_len = 0;

	resetStringInfo(&w->text_cut);
	for (int i = 0; i < len;)
	{
		int			j = i;

		while (j < len && s[j] >= '0' && s[j] <= '9')
			j++;
		if (j == i)
		{
			if (s[i] == NUMBER_ESCAPE)
				appendStringInfoChar(&w->text_cut, NUMBER_ESCAPE);
			appendStringInfoChar(&w->text_cut, s[i]);
			made_len++;
			i++;
			continue;
		}
		if (k < TEXT_NUMBERS_MAX_POSITIONS && j - i <= TEXT_NUMBERS_MAX_DIGITS &&
			(j - i == 1 || s[i] != '0'))
		{
			int64		v = 0;

			for (int d = i; d < j; d++)
				v = v * 10 + (s[d] - '0');
			if (k == w->npositions)
				pgs_packed_write_init(&w->numbers[w->npositions++]);
			pgs_packed_write(&w->numbers[k], v, false);
			k++;
			w->any_number = true;
			appendStringInfoChar(&w->text_cut, NUMBER_ESCAPE);
			appendStringInfoChar(&w->text_cut, NUMBER_MARK);
		}
		else
		{
			appendBinaryStringInfo(&w->text_cut, s + i, j - i);
			made_len += j - i;
		}
		i = j;
	}
	w->named += made_len + 1 + (uint64) k * TEXT_NUMBERS_MAX_DIGITS;
}

/* Append element (the len bytes at s, or NULL if isnull). */
static void
texts_write(TextsWriter *w, const char *s, int len, bool isnull)
{
	put_text(&w->texts, s, len, isnull);
	w->n++;
	distinct_write(&w->whole, s, len, isnull);
	if (!w->numbers_ok)
		return;
	if (isnull)
	{
		distinct_write(&w->cut, NULL, 0, true);
		return;
	}
	/* a text's 0x01 bytes take two each once cut: past what a buffer holds */
	if ((uint64) w->cut.distinct.len + 2 * (uint64) len + 10 >= MaxAllocSize)
	{
		numbers_give_up(w);
		return;
	}
	cut_numbers(w, s, len);
	/* what the reader would refuse is not written */
	if (w->named >= MaxAllocSize)
	{
		numbers_give_up(w);
		return;
	}
	distinct_write(&w->cut, w->text_cut.data, w->text_cut.len, false);
	if (!w->cut.ok)
		numbers_give_up(w);
}

/*
 * Of two encodings of a column, keep in *best (of kind *best_kind) the one
 * zstd's fastest level makes shorter after the body so far, other (of
 * kind other_kind) if it is; free the one not kept.
 */
static void
keep_shorter(StringInfo best, PgsBatchColumnKind *best_kind,
			 StringInfo other, PgsBatchColumnKind other_kind, StringInfo body)
{
	if (pgs_shorter_compressed(other->data, other->len, best->data, best->len, body))
	{
		pfree(best->data);
		*best = *other;
		*best_kind = other_kind;
	}
	else
		pfree(other->data);
}

/*
 * Append the column written to the body (kind and bytes), and free the
 * writer's.
 */
static void
texts_write_end(TextsWriter *w, StringInfo body)
{
	StringInfoData best;
	PgsBatchColumnKind best_kind = PGS_BATCH_TEXTS;
	StringInfoData other;

	initStringInfo(&best);
	pgs_put_varint(&best, (uint64) w->n);
	appendBinaryStringInfo(&best, w->texts.data, w->texts.len);
	pfree(w->texts.data);
	if (w->whole.ok)
	{
		initStringInfo(&other);
		distinct_put_texts(&w->whole, &other);
		pgs_packed_write_end(&w->whole.ids, &other);
		distinct_give_up(&w->whole);
		keep_shorter(&best, &best_kind, &other, PGS_BATCH_TEXT_IDS, body);
	}
	if (w->numbers_ok && w->any_number)
	{
		StringInfoData packed;

		initStringInfo(&other);
		initStringInfo(&packed);
		distinct_put_texts(&w->cut, &other);
		pgs_packed_write_end(&w->cut.ids, &packed);
		pgs_put_varint(&other, (uint64) packed.len);
		appendBinaryStringInfo(&other, packed.data, packed.len);
		pgs_put_varint(&other, (uint64) w->npositions);
		for (int k = 0; k < w->npositions; k++)
		{
			resetStringInfo(&packed);
			pgs_packed_write_end(&w->numbers[k], &packed);
			pgs_put_varint(&other, (uint64) packed.len);
			appendBinaryStringInfo(&other, packed.data, packed.len);
		}
		pfree(packed.data);
		keep_shorter(&best, &best_kind, &other, PGS_BATCH_TEXT_NUMBERS, body);
	}
	numbers_give_up(w);
	put_column(body, best_kind, best.data, best.len);
	pfree(best.data);
}

/* A text[] argument as a texts column of the body. */
static void
texts_of_array(StringInfo body, ArrayType *a)
{
	ArrayIterator it;
	Datum		d;
	bool		isnull;
	TextsWriter *w = palloc(sizeof(TextsWriter));

	check_argument_array(a, TEXTOID);
	texts_write_init(w);
	it = array_create_iterator(a, 0, NULL);
	while (array_iterate(it, &d, &isnull))
	{
		text	   *t = isnull ? NULL : DatumGetTextPP(d);

		texts_write(w, isnull ? NULL : VARDATA_ANY(t),
					isnull ? 0 : VARSIZE_ANY_EXHDR(t), isnull);
	}
	array_free_iterator(it);
	texts_write_end(w, body);
	pfree(w);
}

/* A double precision[] argument as a double precision column; its kind. */
static PgsBatchColumnKind
floats_of_array(StringInfo col, ArrayType *a, StringInfo body)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	StringInfoData bitmap;
	StringInfoData bytes;
	bool		any_null = false;

	check_argument_array(a, FLOAT8OID);
	deconstruct_array(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	initStringInfo(&bitmap);
	initStringInfo(&bytes);
	for (int i = 0; i < n; i++)
	{
		float8		f = nulls[i] ? 0 : DatumGetFloat8(elems[i]);
		uint64		bits;

		memcpy(&bits, &f, sizeof(bits));
		put_float(&bitmap, &bytes, &any_null, i, bits, nulls[i]);
	}
	return end_floats(col, &bitmap, &bytes, any_null, n, body);
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
 * The payload of the columns given as the function's arguments, in the
 * layout's order: an integer column packed (pgsentinel_pack()) or as an
 * array (packed here), a text column as text[], a double precision column
 * as double precision[]; a NULL argument is a column of NULLs.
 */
static bytea *
pack_arguments(FunctionCallInfo fcinfo, const PgsBatchLayout *layout)
{
	StringInfoData body;
	StringInfoData col;

	if (PG_NARGS() != layout->ncols)
		elog(ERROR, "a batch's pack function is declared with %d arguments, not %d",
			 PG_NARGS(), layout->ncols);
	initStringInfo(&body);
	initStringInfo(&col);
	pgs_put_varint(&body, (uint64) layout->ncols);
	for (int i = 0; i < layout->ncols; i++)
	{
		PgsBatchColumnKind kind = layout->kinds[i];

		resetStringInfo(&col);
		if (PG_ARGISNULL(i))
		{
			put_column(&body, PGS_BATCH_ABSENT, NULL, 0);
			continue;
		}
		if (layout->kinds[i] == PGS_BATCH_TEXTS)
		{
			texts_of_array(&body, PG_GETARG_ARRAYTYPE_P(i));
			continue;
		}
		else if (layout->kinds[i] == PGS_BATCH_FLOAT8)
			kind = floats_of_array(&col, PG_GETARG_ARRAYTYPE_P(i), &body);
		else if (get_fn_expr_argtype(fcinfo->flinfo, i) == InvalidOid)
			elog(ERROR, "a batch's pack function was called without its SQL declaration");
		else if (get_fn_expr_argtype(fcinfo->flinfo, i) == BYTEAOID)
		{
			bytea	   *packed = PG_GETARG_BYTEA_PP(i);
			PgsPackedReader r;

			/* what pgsentinel_pack() wrote, or an error now, not when read */
			(void) pgs_packed_begin(&r, packed);
			appendBinaryStringInfo(&col, VARDATA_ANY(packed), VARSIZE_ANY_EXHDR(packed));
		}
		else
			pgs_pack_array(&col, PG_GETARG_ARRAYTYPE_P(i), &body);
		put_column(&body, kind, col.data, col.len);
	}
	return payload_of_body(&body);
}

/*
 * SQL functions pgsentinel_batch_pack(the row columns of 30_archive.sql)
 * and pgsentinel_statement_batch_pack(the reading columns of
 * 32_archive_statements.sql): their payload.
 */
Datum
pgsentinel_batch_pack(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(pack_arguments(fcinfo, &pgs_rows_layout));
}

Datum
pgsentinel_statement_batch_pack(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(pack_arguments(fcinfo, &pgs_readings_layout));
}

/*
 * SQL function pgsentinel_sample_pack(the sample columns of 30_archive.sql):
 * the payload of a batch's samples (pgsentinel_archive_batch.sample_data).
 */
Datum
pgsentinel_sample_pack(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(pack_arguments(fcinfo, &pgs_samples_layout));
}

/*
 * SQL functions pgsentinel_minute_pack(), pgsentinel_session_minute_pack()
 * and pgsentinel_blocking_minute_pack(the columns of a minute's rollup,
 * 30_archive.sql): their payload.
 */
Datum
pgsentinel_minute_pack(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(pack_arguments(fcinfo, &pgs_minute_layout));
}

Datum
pgsentinel_session_minute_pack(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(pack_arguments(fcinfo, &pgs_session_minute_layout));
}

Datum
pgsentinel_blocking_minute_pack(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(pack_arguments(fcinfo, &pgs_blocking_minute_layout));
}

/*
 * One row's element of each column, as keep_rows() reads and writes them:
 * an integer, a text's bytes, a number's bits.
 */
typedef struct RowCells
{
	bool		have[PGS_BATCH_MAX_COLUMNS];
	int64		v[PGS_BATCH_MAX_COLUMNS];
	const char *text[PGS_BATCH_MAX_COLUMNS];
	int			text_len[PGS_BATCH_MAX_COLUMNS];
} RowCells;

/*
 * Whether to keep a row (column 0 in cells->v[0] when it has one), which
 * the function may change (a renumbered sample).
 */
typedef bool (*KeepRow) (RowCells *cells, void *arg);

/*
 * The payload of the rows of payload that keep() keeps, their columns
 * otherwise as they were.  Each column is written as it is read: what this
 * takes grows with the bytes written, not with the rows the input claims.
 */
static bytea *
keep_rows(bytea *payload, const PgsBatchLayout *layout, KeepRow keep, void *arg)
{
	int			ncols = layout->ncols;
	PgsBatchColumnBytes cols[PGS_BATCH_MAX_COLUMNS];
	PgsPackedReader packed[PGS_BATCH_MAX_COLUMNS];
	PgsTextsReader texts[PGS_BATCH_MAX_COLUMNS];
	PgsFloatsReader floats[PGS_BATCH_MAX_COLUMNS];
	PgsPackedWriter out_packed[PGS_BATCH_MAX_COLUMNS];
	StringInfoData out_bytes[PGS_BATCH_MAX_COLUMNS];	/* numbers */
	TextsWriter *out_texts[PGS_BATCH_MAX_COLUMNS];
	StringInfoData out_bitmap[PGS_BATCH_MAX_COLUMNS];	/* numbers' */
	bool		out_nulls[PGS_BATCH_MAX_COLUMNS];
	int			n[PGS_BATCH_MAX_COLUMNS];
	int			nrows = 0;
	int			kept = 0;
	StringInfoData body;
	StringInfoData col;

	pgs_batch_open(payload, layout, cols);
	for (int i = 0; i < ncols; i++)
	{
		n[i] = 0;
		if (cols[i].kind == PGS_BATCH_PACKED)
			n[i] = pgs_packed_begin_bytes(&packed[i], cols[i].data, cols[i].len);
		else if (cols[i].kind == PGS_BATCH_TEXTS)
			n[i] = pgs_texts_begin(&texts[i], &cols[i]);
		else if (cols[i].kind == PGS_BATCH_FLOAT8)
			n[i] = pgs_floats_begin(&floats[i], &cols[i]);
		nrows = Max(nrows, n[i]);
		pgs_packed_write_init(&out_packed[i]);
		initStringInfo(&out_bytes[i]);
		initStringInfo(&out_bitmap[i]);
		out_nulls[i] = false;
	}

	for (int i = 0; i < ncols; i++)
	{
		out_texts[i] = NULL;
		if (cols[i].kind != PGS_BATCH_TEXTS)
			continue;
		out_texts[i] = palloc(sizeof(TextsWriter));
		texts_write_init(out_texts[i]);
	}

	for (int j = 0; j < nrows; j++)
	{
		RowCells	cells;

		CHECK_FOR_INTERRUPTS();
		memset(&cells, 0, sizeof(cells));
		for (int i = 0; i < ncols; i++)
		{
			uint64		bits = 0;

			if (j >= n[i])
				continue;
			if (cols[i].kind == PGS_BATCH_PACKED)
				cells.have[i] = pgs_packed_next(&packed[i], &cells.v[i]);
			else if (cols[i].kind == PGS_BATCH_FLOAT8)
			{
				cells.have[i] = pgs_floats_next(&floats[i], &bits);
				cells.v[i] = (int64) bits;
			}
			else if (cols[i].kind == PGS_BATCH_TEXTS)
				cells.have[i] = pgs_texts_next_bytes(&texts[i], &cells.text[i],
													 &cells.text_len[i]);
		}
		if (!keep(&cells, arg))
			continue;
		for (int i = 0; i < ncols; i++)
		{
			if (cols[i].kind == PGS_BATCH_ABSENT)
				continue;
			if (layout->kinds[i] == PGS_BATCH_TEXTS)
				texts_write(out_texts[i], cells.text[i], cells.text_len[i],
							!cells.have[i]);
			else if (layout->kinds[i] == PGS_BATCH_FLOAT8)
				put_float(&out_bitmap[i], &out_bytes[i], &out_nulls[i], kept,
						  (uint64) cells.v[i], !cells.have[i]);
			else
				pgs_packed_write(&out_packed[i], cells.v[i], !cells.have[i]);
		}
		kept++;
	}

	initStringInfo(&body);
	initStringInfo(&col);
	pgs_put_varint(&body, (uint64) ncols);
	for (int i = 0; i < ncols; i++)
	{
		PgsBatchColumnKind kind = layout->kinds[i];

		resetStringInfo(&col);
		if (cols[i].kind == PGS_BATCH_ABSENT)
		{
			put_column(&body, PGS_BATCH_ABSENT, NULL, 0);
			continue;
		}
		if (layout->kinds[i] == PGS_BATCH_TEXTS)
		{
			texts_write_end(out_texts[i], &body);
			continue;
		}
		else if (layout->kinds[i] == PGS_BATCH_FLOAT8)
			kind = end_floats(&col, &out_bitmap[i], &out_bytes[i], out_nulls[i], kept,
							  &body);
		else
		{
			out_packed[i].context = &body;
			pgs_packed_write_end(&out_packed[i], &col);
		}
		put_column(&body, kind, col.data, col.len);
	}
	return payload_of_body(&body);
}

/* The samples' new indexes (keep_session_row()). */
typedef struct SampleMap
{
	Datum	   *to;
	bool	   *nulls;
	int			n;
} SampleMap;

/* A session row is kept if its sample (row_samples, column 0) is mapped. */
static bool
keep_session_row(RowCells *cells, void *arg)
{
	SampleMap  *map = (SampleMap *) arg;
	int64		si = cells->v[0];

	if (!cells->have[0] || si < 1 || si > map->n || map->nulls[si - 1] ||
		DatumGetInt32(map->to[si - 1]) < 1)
		return false;
	cells->v[0] = DatumGetInt32(map->to[si - 1]);
	return true;
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
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(1);
	SampleMap	map;

	if (ARR_ELEMTYPE(a) != INT4OID || ARR_NDIM(a) > 1)
		elog(ERROR, "pgsentinel_batch_keep: the sample map is not an integer[]");
	deconstruct_array(a, INT4OID, 4, true, TYPALIGN_INT, &map.to, &map.nulls, &map.n);
	PG_RETURN_BYTEA_P(keep_rows(PG_GETARG_BYTEA_PP(0), &pgs_rows_layout,
								keep_session_row, &map));
}

/* A reading's time, and the time after which readings are kept. */
typedef struct ReadingsAfter
{
	TimestampTz first_time;
	TimestampTz after;
} ReadingsAfter;

/* A reading is kept if its time (ash_us, column 0) is after. */
static bool
keep_reading(RowCells *cells, void *arg)
{
	ReadingsAfter *r = (ReadingsAfter *) arg;

	return cells->have[0] && pgs_us_after(r->first_time, cells->v[0]) > r->after;
}

/*
 * SQL function pgsentinel_statement_batch_keep(first_time, payload,
 * after): the payload of the readings taken after after (a fleet's
 * landing of a batch it has the first readings of).
 */
Datum
pgsentinel_statement_batch_keep(PG_FUNCTION_ARGS)
{
	ReadingsAfter r;

	r.first_time = PG_GETARG_TIMESTAMPTZ(0);
	r.after = PG_GETARG_TIMESTAMPTZ(2);
	PG_RETURN_BYTEA_P(keep_rows(PG_GETARG_BYTEA_PP(1), &pgs_readings_layout,
								keep_reading, &r));
}

/*
 * SQL function pgsentinel_batch_format(payload, of): its format number, or
 * an error if this version cannot read it as the rows of a batch of the
 * table named by of ('rows': pgsentinel_archive_batch's row_data,
 * 'samples': its sample_data, 'statements':
 * pgsentinel_archive_statement_batch; NULL: rows or statements), or its columns are
 * not what the pack functions write (the fleet checks a batch before it
 * lands; the texts' encoding and the values' ranges are checked as they
 * are read).
 */
Datum
pgsentinel_batch_format(PG_FUNCTION_ARGS)
{
	bytea	   *payload;
	char	   *of = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	PgsBatchColumnBytes cols[PGS_BATCH_MAX_COLUMNS];
	const PgsBatchLayout *layout = NULL;
	const unsigned char *body;
	const unsigned char *body_end;
	uint64		ncols;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	payload = PG_GETARG_BYTEA_PP(0);

	if (of != NULL && strcmp(of, "rows") != 0 && strcmp(of, "samples") != 0 &&
		strcmp(of, "statements") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown kind of archive batch: \"%s\"", of),
				 errhint("Use 'rows' (pgsentinel_archive_batch.row_data), 'samples' (pgsentinel_archive_batch.sample_data), 'statements' (pgsentinel_archive_statement_batch) or NULL (rows or statements).")));
	expand_body(payload, &body, &body_end);
	ncols = get_varint(&body, body_end);
	/* of NULL: the rows have always had more columns than the readings */
	if (of != NULL ? strcmp(of, "rows") == 0 :
		ncols >= (uint64) pgs_rows_layout.min_ncols)
		layout = &pgs_rows_layout;
	else if (of != NULL && strcmp(of, "samples") == 0)
		layout = &pgs_samples_layout;
	else
		layout = &pgs_readings_layout;
	split_columns(body, body_end, ncols, layout, cols);
	for (int i = 0; i < layout->ncols; i++)
	{
		PgsPackedReader packed;
		PgsTextsReader texts;
		PgsFloatsReader floats;

		if (cols[i].kind == PGS_BATCH_PACKED)
			(void) pgs_packed_begin_bytes(&packed, cols[i].data, cols[i].len);
		else if (cols[i].kind == PGS_BATCH_TEXTS)
			(void) pgs_texts_begin(&texts, &cols[i]);
		else if (cols[i].kind == PGS_BATCH_FLOAT8)
			(void) pgs_floats_begin(&floats, &cols[i]);
	}
	PG_RETURN_INT32(PGS_BATCH_FORMAT);
}
