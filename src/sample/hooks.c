/*-------------------------------------------------------------------------
 *
 * hooks.c
 *		Per-statement hooks: each backend publishes, in its own slot of
 *		shared memory, what it is executing -- the top-level statement's
 *		query id and command type, and when a statement runs nested inside
 *		another (functions, procedures, DO blocks) the nested statement's
 *		query id, command type and text.
 *
 * Hot path (a plain top-level statement): ExecutorStart compares the slot
 * with what it would write and writes only when something changed;
 * ExecutorEnd decrements a counter.  No lock, no allocation, no callback
 * per transaction.  Nested statements also copy their text (at most
 * track_activity_query_size).
 *
 * A statement is top-level when it runs the client's own query string
 * (its source text is debug_query_string, or ProcessUtility says so; with
 * the extended query protocol the text is the portal's copy of it: equal,
 * at depth 0); any other is nested.  Top-level statements also reset the
 * nesting depth, which ExecutorStart/ExecutorEnd and ProcessUtility count,
 * so a depth left over by an error (ExecutorEnd is not called then) never
 * outlives the statement that failed.  Within a statement, the
 * subtransaction callback puts the depth back when a PL/pgSQL exception
 * block catches an error.
 *
 * Statements that are not top-level do not reset the depth, and nest_stack
 * points to their source texts, which an aborting transaction frees (a
 * statement failing inside a function, an error a background worker
 * catches around SPI).  So the first time a backend opens such a statement
 * it registers a transaction callback that, on abort, forgets every open
 * statement; a backend that only runs top-level statements (the hot path)
 * never pays for it.
 *
 * A top-level statement also answers the sampler's request for a query id,
 * when there is one (queryid_backfill.c owns that exchange).  The slots are
 * read by backend_status_reader.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/scansup.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/backend_status.h"

#include "compat.h"
#include "pgsentinel.h"
#include "sample/backend_slot.h"
#include "store/ash_rows.h"

#define MAX_NEST_TRACKED	32
#define MAX_SUBXACT_TRACKED 64

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* This backend's slot, found on first use. */
static PgsBackendSlot *my_slot = NULL;

/* Executors and utility statements currently open in this backend. */
static int	nest_depth = 0;

/* What each open nesting level executes, to restore it when inner ones end. */
typedef struct NestedStatement
{
	uint64		queryid;
	uint8		cmdtype;
	const char *source;
	int			location;
	int			len;
} NestedStatement;
static NestedStatement nest_stack[MAX_NEST_TRACKED];

/* nest_depth when each open subtransaction started. */
typedef struct SubxactDepth
{
	SubTransactionId subid;
	int			depth;
} SubxactDepth;
static SubxactDepth subxact_stack[MAX_SUBXACT_TRACKED];
static int	subxact_top = 0;

/*
 * The statement start of the client's top-level utility statement while it
 * runs, else 0.  A utility that runs a query (CREATE TABLE AS, EXPLAIN
 * ANALYZE, COPY (query) TO) may give the executor the client's own query
 * string: that query is nested in the utility, not the client's next
 * statement.  An error leaves it set; the client's next message starts at
 * another time, to which it does not apply.
 */
static TimestampTz top_utility_start = 0;

/* pgs_xact_callback is registered (once a non-top statement was seen) */
static bool xact_callback_registered = false;

static void pgs_xact_callback(XactEvent event, void *arg);

/* Map core's CmdType to ours. */
static inline uint8
cmdtype_of(CmdType op)
{
	switch (op)
	{
		case CMD_SELECT:
			return PGS_CMD_SELECT;
		case CMD_UPDATE:
			return PGS_CMD_UPDATE;
		case CMD_INSERT:
			return PGS_CMD_INSERT;
		case CMD_DELETE:
			return PGS_CMD_DELETE;
		case CMD_MERGE:
			return PGS_CMD_MERGE;
		case CMD_UTILITY:
			return PGS_CMD_UTILITY;
		case CMD_NOTHING:
			return PGS_CMD_NOTHING;
		default:
			return PGS_CMD_UNKNOWN;
	}
}

/* Find and claim this backend's slot; NULL if there is none. */
static PgsBackendSlot *
get_my_slot(void)
{
	if (likely(my_slot != NULL))
		return my_slot;
	if (pgs_state == NULL)
		return NULL;
	my_slot = pgs_backend_slot(pgs_my_proc_number());
	if (my_slot != NULL)
	{
		PGS_SLOT_BEGIN_WRITE(my_slot);
		my_slot->pid = MyProcPid;
		my_slot->top_queryid = 0;
		my_slot->top_cmdtype = PGS_CMD_UNKNOWN;
		my_slot->nested = 0;
		my_slot->exec_queryid = 0;
		my_slot->exec_cmdtype = PGS_CMD_UNKNOWN;
		my_slot->text_len = 0;
		my_slot->answer_request = 0;
		/* query_id_wanted is kept: it may be about our first statement */
		PGS_SLOT_END_WRITE(my_slot);
	}
	return my_slot;
}

/*
 * Publish a nested statement: its query id, command type and the part of
 * the source text that is this statement (as pg_stat_statements cuts it).
 */
static void
publish_nested(PgsBackendSlot *slot, const NestedStatement *st)
{
	const char *text = st->source;
	int			len = 0;

	if (text != NULL)
	{
		int			location = st->location;
		int			stmt_len = st->len;

		if (location >= 0)
		{
			text += location;
			len = stmt_len > 0 ? stmt_len : (int) strlen(text);
		}
		else
			len = (int) strlen(text);
		while (len > 0 && scanner_isspace(*text))
		{
			text++;
			len--;
		}
		len = Min(len, pgstat_track_activity_query_size - 1);
	}

	PGS_SLOT_BEGIN_WRITE(slot);
	slot->nested = 1;
	slot->exec_queryid = st->queryid;
	slot->exec_cmdtype = st->cmdtype;
	if (len > 0)
		memcpy(slot->text, text, len);
	slot->text_len = len;
	PGS_SLOT_END_WRITE(slot);
}

/* Back to the statement one level up (or to the top-level one). */
static void
publish_parent(PgsBackendSlot *slot, int depth)
{
	/* nest_stack[d] describes the statement opened at depth d (d >= 1) */
	if (depth >= 1 && depth < MAX_NEST_TRACKED && nest_stack[depth].source != NULL)
		publish_nested(slot, &nest_stack[depth]);
	else if (slot->nested)
	{
		PGS_SLOT_BEGIN_WRITE(slot);
		slot->nested = 0;
		slot->text_len = 0;
		PGS_SLOT_END_WRITE(slot);
	}
}

/*
 * Record a statement opened at the current depth, then count it open.
 * top: it is the client's own statement.
 */
static void
statement_opened(bool top, uint64 queryid, uint8 cmdtype, const char *source,
				 int location, int len)
{
	PgsBackendSlot *slot = get_my_slot();
	int			depth;

	if (top)
		nest_depth = 0;
	else if (unlikely(!xact_callback_registered))
	{
		RegisterXactCallback(pgs_xact_callback, NULL);
		xact_callback_registered = true;
	}
	depth = nest_depth++;
	if (unlikely(slot == NULL))
		return;
	if (top)
	{
		if (unlikely(pgs_query_id_wanted(slot)))
			pgs_answer_query_id_request(slot, queryid, cmdtype, source,
										location, len);
		if (slot->top_queryid != queryid || slot->top_cmdtype != cmdtype ||
			slot->nested)
		{
			PGS_SLOT_BEGIN_WRITE(slot);
			slot->top_queryid = queryid;
			slot->top_cmdtype = cmdtype;
			slot->nested = 0;
			slot->text_len = 0;
			PGS_SLOT_END_WRITE(slot);
		}
		return;
	}
	if (depth >= 1 && depth < MAX_NEST_TRACKED)
	{
		NestedStatement *st = &nest_stack[depth];

		st->queryid = queryid;
		st->cmdtype = cmdtype;
		st->source = source;
		st->location = location;
		st->len = len;
		publish_nested(slot, st);
	}
	else
	{
		/* not the client's text, yet not under another statement */
		NestedStatement st = {queryid, cmdtype, source, location, len};

		publish_nested(slot, &st);
	}
}

/*
 * A statement opened by statement_opened() has finished normally.  The
 * common case -- the client's own statement ends -- is inline in the
 * callers; this is the rest.
 */
static pg_noinline void
statement_closed_nested(void)
{
	int			depth;

	if (nest_depth > 0)
		nest_depth--;
	depth = nest_depth;
	if (depth >= 1 && my_slot != NULL)
	{
		if (depth < MAX_NEST_TRACKED)
			nest_stack[depth].source = NULL;
		publish_parent(my_slot, depth - 1);
	}
}

static inline void
statement_closed(void)
{
	if (likely(nest_depth == 1))
		nest_depth = 0;
	else
		statement_closed_nested();
}

/*
 * ExecutorStart hook: publish the statement about to run.  The common case
 * -- the client's own statement, the same as last time -- only compares.
 */
static inline void
next_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/*
 * Is this the client's own statement?  Its source text is the client's
 * query string; with the extended query protocol it is a copy of it (the
 * portal's), equal in content, and no other statement is open then.  Not
 * the query a top-level utility statement of that string runs.
 */
static bool
is_client_statement(const char *source)
{
	if (top_utility_start != 0 &&
		top_utility_start == GetCurrentStatementStartTimestamp())
		return false;
	return source == debug_query_string ||
		(nest_depth == 0 && source != NULL && debug_query_string != NULL &&
		 strcmp(source, debug_query_string) == 0);
}

/* ExecutorStart of any statement but the unchanged client's own one. */
static pg_noinline void
executor_start_slow(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *pstmt = queryDesc->plannedstmt;

	statement_opened(is_client_statement(queryDesc->sourceText),
					 pgs_queryid_from(pstmt->queryId),
					 cmdtype_of(queryDesc->operation),
					 queryDesc->sourceText, pstmt->stmt_location,
					 pstmt->stmt_len);
	next_ExecutorStart(queryDesc, eflags);
}

static void
pgs_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	/*
	 * Both paths end in tail calls, so that this function saves no
	 * registers: its few instructions run on every statement.
	 */
	if (likely(queryDesc->sourceText == debug_query_string && my_slot != NULL &&
			   my_slot->top_queryid == pgs_queryid_from(queryDesc->plannedstmt->queryId) &&
			   !my_slot->nested &&
			   my_slot->top_cmdtype == cmdtype_of(queryDesc->operation) &&
			   !pgs_query_id_wanted(my_slot)))
	{
		nest_depth = 1;
		next_ExecutorStart(queryDesc, eflags);
	}
	else
		executor_start_slow(queryDesc, eflags);
}

/* ExecutorEnd hook: the statement is done. */
static void
pgs_ExecutorEnd(QueryDesc *queryDesc)
{
	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	statement_closed();
}

/* ProcessUtility hook: utility statements, and the nesting of CALL/DO. */
static void
pgs_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	bool		top = context == PROCESS_UTILITY_TOPLEVEL;
	TimestampTz outer_utility_start = top_utility_start;

	statement_opened(top, pgs_queryid_from(pstmt->queryId), PGS_CMD_UTILITY,
					 queryString, pstmt->stmt_location, pstmt->stmt_len);
	if (top)
		top_utility_start = GetCurrentStatementStartTimestamp();
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
	top_utility_start = outer_utility_start;
	statement_closed();
}

/*
 * Forget the statements opened at depth and deeper: they were aborted, and
 * their texts may be freed.  The slot shows the statement one level up.
 */
static void
forget_statements(int depth)
{
	int			d;

	for (d = depth; d < Min(nest_depth, MAX_NEST_TRACKED); d++)
		nest_stack[d].source = NULL;
	nest_depth = depth;
	if (my_slot != NULL)
		publish_parent(my_slot, depth - 1);
}

/* Transactions: an abort ends every statement still open. */
static void
pgs_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		if (nest_depth > 0)
			forget_statements(0);
		subxact_top = 0;
	}
}

/* Subtransactions: remember the depth at start, put it back on abort. */
static void
pgs_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	switch (event)
	{
		case SUBXACT_EVENT_START_SUB:
			if (subxact_top < MAX_SUBXACT_TRACKED)
			{
				subxact_stack[subxact_top].subid = mySubid;
				subxact_stack[subxact_top].depth = nest_depth;
			}
			subxact_top++;
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
		case SUBXACT_EVENT_ABORT_SUB:
			if (subxact_top == 0)
				break;
			subxact_top--;
			if (event == SUBXACT_EVENT_ABORT_SUB &&
				subxact_top < MAX_SUBXACT_TRACKED &&
				subxact_stack[subxact_top].subid == mySubid &&
				nest_depth > subxact_stack[subxact_top].depth)
				forget_statements(subxact_stack[subxact_top].depth);
			break;
		default:
			break;
	}
}

/* Chain the hooks; called from _PG_init. */
void
pgs_install_hooks(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = pgs_ExecutorStart;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = pgs_ExecutorEnd;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = pgs_ProcessUtility;
	RegisterSubXactCallback(pgs_subxact_callback, NULL);
}
