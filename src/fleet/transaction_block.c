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
 * taken before the call).  This asks the transaction machinery instead,
 * as PreventInTransactionBlock() does, but answers rather than raises, so
 * that the caller's error can name what would be left behind.
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
	PG_RETURN_BOOL(IsTransactionBlock() ||
				   IsSubTransaction() ||
				   (MyXactFlags & XACT_FLAGS_PIPELINING) != 0);
}
