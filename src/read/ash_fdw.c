/*-------------------------------------------------------------------------
 *
 * ash_fdw.c
 *		The foreign data wrapper under 2.0's pg_active_session_history
 *		view: a foreign table over the ASH ring.
 *
 * A set-returning function in FROM always materializes its whole result:
 * every column of every row is formed into a tuple and written to a
 * tuplestore (to disk beyond work_mem) before the query sees the first
 * row, whatever the query reads.  With 31 columns that was most of the
 * cost of reading the history.  As a foreign table the ring is scanned
 * like a table instead: rows are streamed as virtual tuples, and only the
 * columns the query uses (its target list and its conditions, which the
 * planner hands us) are computed; count(*) computes none and copies no
 * row.  The ring is read a chunk at a time, without a lock, within bounds
 * fixed once per query (ash_view.c, ring.c).
 *
 * The planner also gets a real row estimate (the rows in the ring) where
 * a function scan is always assumed to return 1000 rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "access/nbtree.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pg_list.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "pgsentinel.h"
#include "read/views.h"
#include "store/ring.h"

PG_FUNCTION_INFO_V1(pgsentinel_fdw_handler);
PG_FUNCTION_INFO_V1(pgsentinel_fdw_validator);

/* Per-scan state. */
typedef struct AshScanState
{
	AshReader  *reader;
	int			natts;
	int			map[PGS_MAX_COLUMNS];	/* table column -> reader column */
	bool		want[PGS_ASH_COLS];		/* reader columns the query uses */
	bool		want_any;
	Datum		values[PGS_ASH_COLS];
	bool		nulls[PGS_ASH_COLS];
	List	   *bound_exprs;	/* ExprStates of the sample_id bounds */
	List	   *bound_strategies;	/* their btree strategies */
} AshScanState;

/* Rows in the ring now: the planner's estimate. */
static double
rows_in_ring(void)
{
	if (pgs_state == NULL)
		return 1000.0;
	return (double) pgs_ring_visible_rows(&pgs_state->sampler.ash);
}

static void
ash_get_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	baserel->tuples = Max(rows_in_ring(), 1.0);
	baserel->rows = clamp_row_est(baserel->tuples *
								  clauselist_selectivity(root,
														 baserel->baserestrictinfo,
														 0, JOIN_INNER, NULL));
}

static void
ash_get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	/* reading the ring, then a little per row, as a sequential scan */
	Cost		startup = baserel->tuples * cpu_operator_cost;
	Cost		total = startup + baserel->tuples * cpu_tuple_cost;

	add_path(baserel, (Path *) pgs_create_foreignscan_path(root, baserel,
														   baserel->rows,
														   startup, total));
}

/*
 * A condition "sample_id op value" (or "value op sample_id") whose value
 * does not depend on the row -- a constant, a parameter, a subquery run
 * once -- with op one of the integer comparisons: sets *value and returns
 * the btree strategy as if sample_id were on the left, else 0.  The scan
 * evaluates the value once and reads only the rows of those samples.
 */
static int
sample_id_bound(Node *clause, Index relid, AttrNumber sample_id_attno,
				Expr **value)
{
	OpExpr	   *op;
	Node	   *left;
	Node	   *right;
	int			strategy;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return 0;
	op = (OpExpr *) clause;
	left = linitial(op->args);
	right = lsecond(op->args);
	strategy = get_op_opfamily_strategy(op->opno, INTEGER_BTREE_FAM_OID);
	if (strategy == 0)
		return 0;
	if (!(IsA(left, Var) && ((Var *) left)->varno == relid &&
		  ((Var *) left)->varattno == sample_id_attno))
	{
		Node	   *tmp = left;

		left = right;
		right = tmp;
		if (!(IsA(left, Var) && ((Var *) left)->varno == relid &&
			  ((Var *) left)->varattno == sample_id_attno))
			return 0;
		strategy = BTCommuteStrategyNumber(strategy);
	}
	if (contain_var_clause(right) || contain_volatile_functions(right))
		return 0;
	switch (exprType(right))
	{
		case INT8OID:
		case INT4OID:
		case INT2OID:
			break;
		default:
			return 0;
	}
	*value = (Expr *) right;
	return strategy;
}

/*
 * The plan keeps, as its private list, the numbers of the table's columns
 * the query reads (in its target list or its conditions, which the scan
 * node checks; 0 stands for all, a whole-row reference) and the strategies
 * of the bounds on sample_id found in the conditions, whose values are the
 * plan's expressions.
 */
static ForeignScan *
ash_get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
			 ForeignPath *best_path, List *tlist, List *scan_clauses,
			 Plan *outer_plan)
{
	Bitmapset  *attrs = NULL;
	List	   *used = NIL;
	List	   *bound_values = NIL;
	List	   *bound_strategies = NIL;
	AttrNumber	sample_id_attno = get_attnum(foreigntableid, "sample_id");
	ListCell   *lc;
	int			x = -1;

	scan_clauses = extract_actual_clauses(scan_clauses, false);
	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	pull_varattnos((Node *) scan_clauses, baserel->relid, &attrs);
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	attno = x + FirstLowInvalidHeapAttributeNumber;

		if (attno >= 0)
			used = lappend_int(used, attno);
	}
	foreach(lc, scan_clauses)
	{
		Expr	   *value;
		int			strategy;

		if (sample_id_attno == InvalidAttrNumber)
			break;
		strategy = sample_id_bound(lfirst(lc), baserel->relid,
								   sample_id_attno, &value);
		if (strategy != 0)
		{
			bound_values = lappend(bound_values, value);
			bound_strategies = lappend_int(bound_strategies, strategy);
		}
	}
	return make_foreignscan(tlist, scan_clauses, baserel->relid, bound_values,
							list_make2(used, bound_strategies), NIL, NIL,
							outer_plan);
}

/*
 * Narrow the reading to the samples the bounds allow: evaluated when the
 * scan starts, as its parameters are then set.  A NULL bound matches no
 * row.
 */
static void
apply_sample_bounds(ForeignScanState *node, AshScanState *st)
{
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	int64		min = PG_INT64_MIN;
	int64		max = PG_INT64_MAX;
	ListCell   *le;
	ListCell   *ls;

	forboth(le, st->bound_exprs, ls, st->bound_strategies)
	{
		ExprState  *expr = (ExprState *) lfirst(le);
		bool		isnull;
		Datum		d = ExecEvalExprSwitchContext(expr, econtext, &isnull);
		int64		v;

		if (isnull)
		{
			min = PG_INT64_MAX;
			max = PG_INT64_MIN;
			break;
		}
		switch (exprType((Node *) expr->expr))
		{
			case INT8OID:
				v = DatumGetInt64(d);
				break;
			case INT4OID:
				v = DatumGetInt32(d);
				break;
			default:
				v = DatumGetInt16(d);
				break;
		}
		switch (lfirst_int(ls))
		{
			case BTLessStrategyNumber:
				max = Min(max, v == PG_INT64_MIN ? v : v - 1);
				if (v == PG_INT64_MIN)
					min = PG_INT64_MAX; /* nothing is less */
				break;
			case BTLessEqualStrategyNumber:
				max = Min(max, v);
				break;
			case BTEqualStrategyNumber:
				min = Max(min, v);
				max = Min(max, v);
				break;
			case BTGreaterEqualStrategyNumber:
				min = Max(min, v);
				break;
			case BTGreaterStrategyNumber:
				min = Max(min, v == PG_INT64_MAX ? v : v + 1);
				if (v == PG_INT64_MAX)
					max = PG_INT64_MIN; /* nothing is greater */
				break;
		}
	}
	pgs_ash_reader_set_sample_range(st->reader, min, max);
}

static void
ash_begin_scan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	TupleDesc	desc = RelationGetDescr(node->ss.ss_currentRelation);
	List	   *used = (List *) linitial(plan->fdw_private);
	AshScanState *st;
	ListCell   *lc;

	st = palloc0(sizeof(AshScanState));
	st->bound_exprs = ExecInitExprList(plan->fdw_exprs, &node->ss.ps);
	st->bound_strategies = (List *) lsecond(plan->fdw_private);
	st->natts = desc->natts;
	if (st->natts > PGS_MAX_COLUMNS)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_COLUMN_NUMBER),
				 errmsg("foreign table \"%s\" has more columns than pgsentinel provides",
						RelationGetRelationName(node->ss.ss_currentRelation))));
	pgs_map_columns(desc, pgs_ash_columns, pgs_ash_column_types,
					PGS_ASH_COLS, st->map);
	foreach(lc, used)
	{
		int			attno = lfirst_int(lc);

		if (attno == 0)
			memset(st->want, true, sizeof(st->want));
		else if (attno <= st->natts)
			st->want[st->map[attno - 1]] = true;
	}
	for (int i = 0; i < PGS_ASH_COLS; i++)
		st->want_any |= st->want[i];
	node->fdw_state = st;

	/*
	 * The ring is read at the first row asked for, as a function scan
	 * would: a scan that never runs (EXPLAIN, a branch not taken) reads
	 * nothing, and the rows are as of the moment the scan starts.
	 */
}

/* The next row as a virtual tuple; the caller resets per-row memory. */
static TupleTableSlot *
ash_iterate(ForeignScanState *node)
{
	AshScanState *st = (AshScanState *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	int			i;

	ExecClearTuple(slot);
	if (st->reader == NULL)
	{
		st->reader = pgs_ash_reader_begin(node->ss.ps.state->es_query_cxt,
										  node->ss.ps.state->es_query_cxt);
		apply_sample_bounds(node, st);
	}
	if (!st->want_any)
	{
		if (!pgs_ash_reader_skip(st->reader))
			return slot;
		memset(slot->tts_isnull, true, sizeof(bool) * st->natts);
		return ExecStoreVirtualTuple(slot);
	}
	if (!pgs_ash_reader_next(st->reader, st->values, st->nulls, st->want))
		return slot;
	for (i = 0; i < st->natts; i++)
	{
		slot->tts_values[i] = st->values[st->map[i]];
		slot->tts_isnull[i] = st->nulls[st->map[i]];
	}
	return ExecStoreVirtualTuple(slot);
}

static void
ash_rescan(ForeignScanState *node)
{
	AshScanState *st = (AshScanState *) node->fdw_state;

	if (st->reader != NULL)
	{
		pgs_ash_reader_rewind(st->reader);
		/* the bounds may depend on parameters that changed */
		apply_sample_bounds(node, st);
	}
}

static void
ash_end_scan(ForeignScanState *node)
{
	AshScanState *st = (AshScanState *) node->fdw_state;

	if (st->reader != NULL)
		pgs_ash_reader_end(st->reader);
	st->reader = NULL;
}

/* EXPLAIN: how many columns are computed. */
static void
ash_explain(ForeignScanState *node, ExplainState *es)
{
	AshScanState *st = (AshScanState *) node->fdw_state;
	int			n = 0;

	for (int i = 0; i < PGS_ASH_COLS; i++)
		n += st->want[i];
	ExplainPropertyInteger("pgsentinel columns computed", NULL, n, es);
}

Datum
pgsentinel_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	routine->GetForeignRelSize = ash_get_rel_size;
	routine->GetForeignPaths = ash_get_paths;
	routine->GetForeignPlan = ash_get_plan;
	routine->BeginForeignScan = ash_begin_scan;
	routine->IterateForeignScan = ash_iterate;
	routine->ReScanForeignScan = ash_rescan;
	routine->EndForeignScan = ash_end_scan;
	routine->ExplainForeignScan = ash_explain;
	PG_RETURN_POINTER(routine);
}

/* The wrapper, its server and its tables take no options. */
Datum
pgsentinel_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));

	if (options != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("pgsentinel's foreign data wrapper takes no options"),
				 errhint("The history is sized and tuned with the pgsentinel_ash.* settings.")));
	PG_RETURN_VOID();
}
