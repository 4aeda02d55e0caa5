/*-------------------------------------------------------------------------
 *
 * text_template.c
 *		A statement text as a template and its literal values: the archive
 *		stores a template once per day and each row's values beside it.
 *
 * pgsentinel_text_split(text) returns {template, values}: every literal of
 * the text (a quoted string, with its E/B/X/N prefix; a number; a dollar-
 * quoted string; not in a comment) is cut out and replaced by the byte 0x01 in the template,
 * and the literals are joined by 0x01 in values.  pgsentinel_text_fill()
 * puts them back.  The rule that makes the pair exact whatever the text:
 * the cut is by bytes, each literal is copied as it was and put back where
 * it was, so fill(split(t)) = t for any t that holds no 0x01 byte; a text
 * that holds one, or holds no literal, is returned whole with NULL values,
 * and fill(t, NULL) = t.  How well the scanner knows SQL decides only how
 * many texts share a template, never what is read back.  0x01 is a whole
 * character in every server encoding (all are ASCII-safe), so no multibyte
 * character is cut.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"

#define PGS_LITERAL_MARK '\x01'

PG_FUNCTION_INFO_V1(pgsentinel_text_split);
PG_FUNCTION_INFO_V1(pgsentinel_text_fill);

static inline bool
pgs_ident_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

/*
 * End of the quoted string that starts at s[i] (a quote), past its closing
 * quote; backslash escapes count when the string is an E'' string.
 */
static int
pgs_quoted_end(const char *s, int len, int i, bool backslash)
{
	char		q = s[i];

	for (i++; i < len; i++)
	{
		if (backslash && s[i] == '\\')
			i++;
		else if (s[i] == q)
		{
			if (i + 1 < len && s[i + 1] == q)
				i++;
			else
				return i + 1;
		}
	}
	return len;
}

/* End of the number that starts at s[i]: digits, a fraction, an exponent. */
static int
pgs_number_end(const char *s, int len, int i)
{
	while (i < len && isdigit((unsigned char) s[i]))
		i++;
	if (i < len && s[i] == '.')
		for (i++; i < len && isdigit((unsigned char) s[i]); i++)
			;
	if (i < len && (s[i] == 'e' || s[i] == 'E'))
	{
		int			j = i + 1;

		if (j < len && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < len && isdigit((unsigned char) s[j]))
		{
			for (i = j; i < len && isdigit((unsigned char) s[i]); i++)
				;
		}
	}
	return i;
}

/*
 * End of the dollar-quoted string that starts at s[i] ('$'), or -1 when
 * s[i] does not open one ($1, or a '$' inside a word, is not a quote).
 */
static int
pgs_dollar_end(const char *s, int len, int i)
{
	int			t = i + 1;
	int			taglen;

	while (t < len && s[t] != '$' && (isalpha((unsigned char) s[t]) ||
									  s[t] == '_' ||
									  (unsigned char) s[t] >= 0x80 ||
									  (t > i + 1 && isdigit((unsigned char) s[t]))))
		t++;
	if (t >= len || s[t] != '$')
		return -1;
	taglen = t - i + 1;
	for (int j = t + 1; j + taglen <= len; j++)
		if (s[j] == '$' && memcmp(s + j, s + i, taglen) == 0)
			return j + taglen;
	return len;
}

Datum
pgsentinel_text_split(PG_FUNCTION_ARGS)
{
	text	   *in = PG_GETARG_TEXT_PP(0);
	const char *s = VARDATA_ANY(in);
	int			len = VARSIZE_ANY_EXHDR(in);
	StringInfoData tmpl;
	StringInfoData vals;
	int			nvals = 0;
	Datum		elems[2];
	bool		nulls[2] = {false, false};
	int			dims[1] = {2};
	int			lbs[1] = {1};
	int			i = 0;

	if (memchr(s, PGS_LITERAL_MARK, len) != NULL)
		len = -1;				/* kept whole, below */

	initStringInfo(&tmpl);
	initStringInfo(&vals);
	while (i < len)
	{
		unsigned char c = (unsigned char) s[i];
		int			end = -1;

		if (isalpha(c) || c == '_' || c >= 0x80)
		{
			int			j = i + 1;

			while (j < len && pgs_ident_char((unsigned char) s[j]))
				j++;
			/* E'...', B'...', X'...', N'...': the prefix goes with the value */
			if (j == i + 1 && j < len && s[j] == '\'' && strchr("EeBbXxNn", c))
				end = pgs_quoted_end(s, len, j, c == 'E' || c == 'e');
			else
			{
				appendBinaryStringInfo(&tmpl, s + i, j - i);
				i = j;
				continue;
			}
		}
		else if (c == '"')
		{
			int			j = pgs_quoted_end(s, len, i, false);

			appendBinaryStringInfo(&tmpl, s + i, j - i);
			i = j;
			continue;
		}
		else if (c == '-' && i + 1 < len && s[i + 1] == '-')
		{
			const char *nl = memchr(s + i, '\n', len - i);
			int			j = nl ? (int) (nl - s) : len;

			appendBinaryStringInfo(&tmpl, s + i, j - i);
			i = j;
			continue;
		}
		else if (c == '/' && i + 1 < len && s[i + 1] == '*')
		{
			int			j = i + 2;

			while (j + 1 < len && !(s[j] == '*' && s[j + 1] == '/'))
				j++;
			j = Min(j + 2, len);
			appendBinaryStringInfo(&tmpl, s + i, j - i);
			i = j;
			continue;
		}
		else if (c == '\'')
			end = pgs_quoted_end(s, len, i, false);
		else if (isdigit(c) || (c == '.' && i + 1 < len && isdigit((unsigned char) s[i + 1])))
			end = pgs_number_end(s, len, i);
		else if (c == '$')
		{
			if (i + 1 < len && isdigit((unsigned char) s[i + 1]))
			{
				/* a parameter: part of the template */
				int			j = i + 1;

				while (j < len && isdigit((unsigned char) s[j]))
					j++;
				appendBinaryStringInfo(&tmpl, s + i, j - i);
				i = j;
				continue;
			}
			end = pgs_dollar_end(s, len, i);
		}

		if (end < 0)
		{
			appendStringInfoChar(&tmpl, (char) c);
			i++;
			continue;
		}
		appendStringInfoChar(&tmpl, PGS_LITERAL_MARK);
		if (nvals++ > 0)
			appendStringInfoChar(&vals, PGS_LITERAL_MARK);
		appendBinaryStringInfo(&vals, s + i, end - i);
		i = end;
	}

	if (nvals == 0)
	{
		elems[0] = PointerGetDatum(in);
		nulls[1] = true;
		elems[1] = (Datum) 0;
	}
	else
	{
		elems[0] = PointerGetDatum(cstring_to_text_with_len(tmpl.data, tmpl.len));
		elems[1] = PointerGetDatum(cstring_to_text_with_len(vals.data, vals.len));
	}
	PG_RETURN_ARRAYTYPE_P(construct_md_array(elems, nulls, 1, dims, lbs,
											 TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * The text back from its template and values; NULL values: the template
 * is the text.  A template and values that do not match (one more mark
 * than values, or the reverse) are a damaged archive row: a WARNING says
 * so and the text is NULL, so that one such row (edited by hand, or sent
 * by a fleet source) stops neither the archiver's rollups nor a report.
 */
Datum
pgsentinel_text_fill(PG_FUNCTION_ARGS)
{
	text	   *tmpl;
	text	   *vals;
	const char *t;
	const char *v;
	int			tlen;
	int			vlen;
	int			vpos = 0;
	bool		first = true;
	StringInfoData out;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));

	tmpl = PG_GETARG_TEXT_PP(0);
	vals = PG_GETARG_TEXT_PP(1);
	t = VARDATA_ANY(tmpl);
	tlen = VARSIZE_ANY_EXHDR(tmpl);
	v = VARDATA_ANY(vals);
	vlen = VARSIZE_ANY_EXHDR(vals);

	initStringInfo(&out);
	for (int i = 0; i < tlen; i++)
	{
		const char *next;
		int			n;

		if (t[i] != PGS_LITERAL_MARK)
		{
			appendStringInfoChar(&out, t[i]);
			continue;
		}
		if (!first)
		{
			if (vpos >= vlen)
				goto mismatch;
			vpos++;				/* the separator */
		}
		first = false;
		if (vpos >= vlen)
			goto mismatch;
		next = memchr(v + vpos, PGS_LITERAL_MARK, vlen - vpos);
		n = next ? (int) (next - (v + vpos)) : vlen - vpos;
		appendBinaryStringInfo(&out, v + vpos, n);
		vpos += n;
	}
	if (first || vpos != vlen)
		goto mismatch;
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out.data, out.len));

mismatch:
	ereport(WARNING,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("archived literal values do not match their statement template"),
			 errdetail("The template has %d bytes and the values %d.", tlen, vlen),
			 errhint("The archive row was changed by hand or damaged; its text reads as NULL.")));
	PG_RETURN_NULL();
}
