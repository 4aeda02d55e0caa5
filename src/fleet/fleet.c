/*-------------------------------------------------------------------------
 *
 * fleet.c
 *		The repository's periodic work for the fleet (docs/fleet.md), run
 *		by the archiver after each of its cycles: SQL function
 *		pgsentinel_fleet_tick() pulls the servers whose pull interval has
 *		passed, rolls every server's rows up and drops the fleet's
 *		partitions past their retention.
 *
 * It runs in its own transaction, on a primary only, and only when the
 * extension's schema has the fleet (2.1.0 on).  The function catches each
 * server's errors and records them itself; anything else that fails here
 * is logged and the archiver goes on: the fleet never stops the archive.
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
 * The call of the tick, qualified with the extension's schema, when the
 * extension there has the fleet (2.1.0 on); no row otherwise (a server
 * that is no repository runs this lookup and an empty tick).  The function
 * must be the extension's own: in a schema others may create objects in,
 * a function of that name made by another role before the update would
 * otherwise run with the archiver's rights.
 */
static const char *const find_sql =
"SELECT format('SELECT %I.pgsentinel_fleet_tick()', n.nspname)"
"  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
" WHERE e.extname = 'pgsentinel'"
"   AND EXISTS (SELECT FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid"
"                WHERE d.classid = 'pg_proc'::regclass"
"                  AND d.refclassid = 'pg_extension'::regclass"
"                  AND d.refobjid = e.oid AND d.deptype = 'e'"
"                  AND p.proname = 'pgsentinel_fleet_tick'"
"                  AND p.pronamespace = n.oid AND p.pronargs = 0)";

/*
 * The longest a tick may take: a source that does not answer must not
 * hold the archive up for long (the ring would wrap), while a pull that
 * catches up after an outage has minutes.
 */
#define FLEET_TICK_TIMEOUT		"300s"

/* Run the tick once; errors are logged, never raised. */
void
pgs_fleet_tick(void)
{
	MemoryContext oldcxt = CurrentMemoryContext;

	if (RecoveryInProgress())
		return;
	PG_TRY();
	{
		char	   *call = NULL;

		pgs_db_work_begin();
		(void) set_config_option("statement_timeout", FLEET_TICK_TIMEOUT,
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
								 true, ERROR, false);
		if (SPI_execute(find_sql, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
			call = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (call != NULL)
		{
			pgstat_report_activity(STATE_RUNNING, "pgsentinel fleet tick");
			if (SPI_execute(call, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "pgsentinel fleet tick: unexpected result");
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
		/* a tick cancelled by SIGTERM did not fail: the worker exits */
		if (!ShutdownRequestPending)
			ereport(LOG,
					(errmsg("pgsentinel fleet tick failed: %s", edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}
