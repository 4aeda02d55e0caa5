/*-------------------------------------------------------------------------
 *
 * fleet.c
 *		The repository's periodic work for the fleet (docs/fleet.md), run
 *		by the archiver after each of its cycles: SQL function
 *		pgsentinel_fleet_node_keep() keeps the days of the servers placed
 *		on other repository nodes; pgsentinel_fleet_tick() pulls the servers
 *		whose pull interval has passed and drops the fleet's partitions past
 *		their retention; then pgsentinel_fleet_roll() rolls the servers'
 *		rows up.
 *
 * Each runs in its own transaction, on a primary only, and only when the
 * extension's schema has the function: a slow roll never holds a pull's
 * watermark locked nor makes the pulls time out with it, a slow node
 * never holds the pulls, and the drops on a node never wait for locks
 * that this transaction's own pulls took there through postgres_fdw.  The
 * functions catch each server's errors and record them themselves;
 * anything else that fails here is logged and the archiver goes on: the
 * fleet never stops the archive.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "db_worker.h"
#include "fleet/fleet.h"

/*
 * The call of one of the fleet's periodic functions (the first %s: its
 * name; the second: its arguments, each cast to its declared type; the
 * third: its name again), qualified with the extension's schema, when the
 * extension there has it (2.1.0 on); no row otherwise (a server that is no
 * repository runs this lookup and nothing else).  The function must be the
 * extension's own: in a schema others may create objects in, a function of
 * that name made by another role before the update would otherwise run with
 * the archiver's rights; and every argument is passed typed, so that an
 * overload planted later is never a better match, nor makes the call
 * ambiguous.
 */
static const char *const find_sql =
"SELECT format('SELECT count(*) FROM %%I.%s(%s)', n.nspname)"
"  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
" WHERE e.extname = 'pgsentinel'"
"   AND EXISTS (SELECT FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid"
"                WHERE d.classid = 'pg_proc'::regclass"
"                  AND d.refclassid = 'pg_extension'::regclass"
"                  AND d.refobjid = e.oid AND d.deptype = 'e'"
"                  AND p.proname = '%s'"
"                  AND p.pronamespace = n.oid)";

/*
 * The longest a tick may take: a source that does not answer must not
 * hold the archive up for long (the ring would wrap), while a pull that
 * catches up after an outage has minutes.
 */
#define FLEET_TICK_TIMEOUT		"300s"

/*
 * Run the named function once with the given arguments (SQL, typed), in a
 * transaction of its own; errors are logged, never raised.
 */
static void
run_periodic(const char *function, const char *arguments)
{
	MemoryContext oldcxt = CurrentMemoryContext;

	PG_TRY();
	{
		char	   *call = NULL;

		pgs_db_work_begin();
		(void) set_config_option("statement_timeout", FLEET_TICK_TIMEOUT,
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
								 true, ERROR, false);
		if (SPI_execute(psprintf(find_sql, function, arguments, function), true, 1) == SPI_OK_SELECT &&
			SPI_processed == 1)
			call = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (call != NULL)
		{
			pgstat_report_activity(STATE_RUNNING, call);
			if (SPI_execute(call, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "%s: unexpected result", function);
		}
		pgs_db_work_commit();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		pgs_db_work_abort();
		/* a call cancelled by SIGTERM did not fail: the worker exits */
		if (!ShutdownRequestPending)
			ereport(LOG,
					(errmsg("%s failed: %s", function, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/* Keep the nodes, run the tick, then the rolls, once. */
void
pgs_fleet_tick(void)
{
	if (RecoveryInProgress())
		return;
	run_periodic("pgsentinel_fleet_node_keep", "");
	if (ShutdownRequestPending)
		return;
	run_periodic("pgsentinel_fleet_tick", "");
	if (ShutdownRequestPending)
		return;
	/* every server */
	run_periodic("pgsentinel_fleet_roll", "NULL::pg_catalog.text");
}
