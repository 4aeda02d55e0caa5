/*-------------------------------------------------------------------------
 *
 * columns.c
 *		Result columns by name.  One C function serves every SQL declaration
 *		of a view that pgsentinel has shipped (1.4, 1.5, 2.0): it computes all
 *		the columns it knows and returns those the caller's declaration asks
 *		for, matched by name.  An old installation therefore keeps working
 *		with the new library until ALTER EXTENSION pgsentinel UPDATE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "utils/builtins.h"

#include "read/views.h"

/*
 * For each attribute of the caller's result descriptor, the index of the
 * column of the same name in known[] (nknown of them, of types
 * known_types[]), into map[].  A column unknown by name or declared with
 * another type is an error, never a misread datum.
 */
void
pgs_map_columns(TupleDesc desc, const char *const *known,
				const Oid *known_types, int nknown, int *map)
{
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		const char *name = NameStr(TupleDescAttr(desc, i)->attname);
		int			j;

		for (j = 0; j < nknown; j++)
			if (strcmp(name, known[j]) == 0)
				break;
		if (j == nknown)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("pgsentinel does not provide a column named \"%s\"", name),
					 errhint("Run ALTER EXTENSION pgsentinel UPDATE.")));
		if (TupleDescAttr(desc, i)->atttypid != known_types[j])
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" is declared as %s, pgsentinel provides %s",
							name, format_type_be(TupleDescAttr(desc, i)->atttypid),
							format_type_be(known_types[j])),
					 errhint("Run ALTER EXTENSION pgsentinel UPDATE.")));
		map[i] = j;
	}
}

/* Put the mapped columns of a full row into the caller's tuplestore. */
void
pgs_put_mapped(Tuplestorestate *store, TupleDesc desc, const int *map,
			   const Datum *values, const bool *nulls)
{
	Datum		out_values[PGS_MAX_COLUMNS];
	bool		out_nulls[PGS_MAX_COLUMNS];
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		out_values[i] = values[map[i]];
		out_nulls[i] = nulls[map[i]];
	}
	tuplestore_putvalues(store, desc, out_values, out_nulls);
}
