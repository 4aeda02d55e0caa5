/*-------------------------------------------------------------------------
 *
 * transaction_block.c
 *		SQL function pgsentinel_in_transaction_block(): whether a rollback
 *		of the caller's transaction could still undo what the current
 *		statement does here.
 *
 * The fleet's administration functions that change another server (a
 * replication slot made on a source, partitions made or dropped on a
 * repository node) refuse to run when it could: that change commits there
 * at once and a rollback here would leave it behind.  Comparing
 * transaction_timestamp() with statement_timestamp() misses two such
 * cases: several statements sent in one simple-Query message (an implicit
 * transaction block: "SELECT f(); SELECT 1/0") and a subtransaction (a DO
 * block or function whose EXCEPTION clause rolls back to the savepoint
 * taken before the call).  This asks the transaction machinery instead.
 *
 * It answers as IsInTransactionBlock() does for a top-level statement,
 * which it cannot ask itself (called from a function, that one always
 * answers true): false only in a transaction of this statement alone, and
 * then it asks for that transaction to be committed as soon as the
 * statement ends, so that a later statement of the same pipeline, sent
 * before its Sync, runs in a transaction of its own and cannot roll this
 * one back.  What it cannot see is a rollback of this same statement
 * after the function returned (an error that the caller's own query
 * raises later).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"

PG_FUNCTION_INFO_V1(pgsentinel_in_transaction_block);

Datum
pgsentinel_in_transaction_block(PG_FUNCTION_ARGS)
{
	if (IsTransactionBlock() || IsSubTransaction())
		PG_RETURN_BOOL(true);

	/* both flags exist from 15.2 on (back-patched) */
#ifdef XACT_FLAGS_PIPELINING
	if (MyXactFlags & XACT_FLAGS_PIPELINING)
		PG_RETURN_BOOL(true);
#endif
#ifdef XACT_FLAGS_NEEDIMMEDIATECOMMIT
	MyXactFlags |= XACT_FLAGS_NEEDIMMEDIATECOMMIT;
#endif
	PG_RETURN_BOOL(false);
}
