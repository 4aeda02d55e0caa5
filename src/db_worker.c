/*-------------------------------------------------------------------------
 *
 * db_worker.c
 *		What the two workers that connect to pgsentinel.db_name (the
 *		statements worker and the archiver) share: the sampler launches
 *		each and launches it again when it exits, after a delay that
 *		doubles while it keeps exiting; each opens its session the same way,
 *		runs its work in transactions the same way, and ends the same way on
 *		SIGTERM.
 *
 * SIGTERM (a fast or smart shutdown, pg_terminate_backend) must never wait
 * for the work under way: an archiving step may hold thousands of samples,
 * a statements step reads the whole statements ring, a partition may wait
 * for a lock.  So while a worker's transaction runs (pgs_db_work_begin()
 * to pgs_db_work_commit() or pgs_db_work_abort()), SIGTERM also cancels the
 * statement it runs, as pg_cancel_backend does: the next
 * CHECK_FOR_INTERRUPTS() -- in a lock wait, an executor loop, a ring
 * reader's loop -- raises "canceling statement", the worker's error
 * handler rolls the whole transaction back (rows and watermark together:
 * nothing is archived twice or lost, the next start goes on from the
 * watermark) and its loop exits with code 0, quietly.  Outside a
 * transaction SIGTERM only sets ShutdownRequestPending and the latch, as
 * SignalHandlerForShutdownRequest does, and the loop exits at its top: a
 * cancel there would have no handler to catch it and would end the worker
 * with a FATAL.  The one wait this cannot end is a libpq call that core's
 * dblink makes without checking for interrupts (PostgreSQL 15 and 16): a
 * fleet pull from a source that stops answering in the middle of a query
 * holds the worker until its connection fails (docs/fleet.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "db_worker.h"
#include "guc.h"

#define RELAUNCH_MIN_MS			1000
#define RELAUNCH_MAX_MS			(5 * 60 * 1000)
/* A lock on one of our tables or pg_stat_statements is waited for this long. */
#define DB_WORKER_LOCK_TIMEOUT	"10s"

/* A transaction of the worker runs: SIGTERM cancels it. */
static volatile sig_atomic_t work_running = false;

/* Ask the running statement to stop at its next CHECK_FOR_INTERRUPTS(). */
static void
cancel_work(void)
{
	QueryCancelPending = true;
	InterruptPending = true;
}

/* The SIGTERM handler of the workers: see the head of this file. */
void
pgs_db_worker_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	ShutdownRequestPending = true;
	if (work_running)
		cancel_work();
	SetLatch(MyLatch);
	errno = save_errno;
}

/* The schema of an extension, by its OID; InvalidOid if there is none. */
Oid
pgs_extension_schema(Oid extoid)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nspid = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nspid = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nspid;
}

/*
 * Lock extension extname of this database to the end of the worker's
 * transaction and return its schema; InvalidOid, nothing locked, if it is
 * not created.  *extoid is the extension (InvalidOid if none).
 *
 * The workers run as the bootstrap superuser and call an extension's
 * functions and read its tables by name.  Were the extension gone while a
 * worker named them -- dropped by its owner, in a schema where others
 * create objects -- a function another role made under one of those
 * names, or taking arguments that ours cast to implicitly, would be chosen
 * and run with the worker's rights; so would one behind a table's name
 * (a view).  So every worker transaction that names an extension's
 * objects takes this lock first, and names them only in the schema it
 * returns, never in one found by an earlier transaction that this one
 * has not confirmed (by OID and by name: a plan or statement names the
 * schema by its name).  DROP EXTENSION, DROP SCHEMA ... CASCADE and DROP
 * OWNED wait for the lock.  ALTER EXTENSION ... SET SCHEMA and ALTER
 * SCHEMA ... RENAME take none: pgsentinel refuses the first (not
 * relocatable); each transaction compares the schema's OID and name with
 * those its statements name, which leaves a move or rename committed in
 * the middle of one (by a superuser, or the schema's owner) to race with
 * a role planting under the name it left.  What SPI then reads of the
 * catalogs agrees with the lock when it is taken before the transaction's
 * snapshot (pgs_db_work_begin() does); lookups in the system caches always
 * do, which is all that the one lock taken later in a transaction (of
 * pg_stat_statements, by the statements archive step) relies on.
 */
Oid
pgs_db_work_extension(const char *extname, Oid *extoid)
{
	for (;;)
	{
		Oid			ext = get_extension_oid(extname, true);
		Oid			nspid;

		*extoid = InvalidOid;
		if (!OidIsValid(ext))
			return InvalidOid;
		LockDatabaseObject(ExtensionRelationId, ext, 0, AccessShareLock);
		/* dropped while the lock was waited for: read its row again */
		InvalidateCatalogSnapshot();
		nspid = pgs_extension_schema(ext);
		if (OidIsValid(nspid))
		{
			*extoid = ext;
			return nspid;
		}
		UnlockDatabaseObject(ExtensionRelationId, ext, 0, AccessShareLock);
	}
}

/*
 * Start a transaction of the worker with SPI, a snapshot and a search path
 * of pg_catalog alone, with extension extname (if not NULL) locked first:
 * returns its schema and *extoid as pgs_db_work_extension() does.  The
 * snapshot is taken after the lock, so that what the transaction reads of
 * the catalogs agrees with what it locked (a lock waited for while the
 * extension was dropped).  A shutdown requested just before it cancels it
 * at once.
 */
Oid
pgs_db_work_begin(const char *extname, Oid *extoid)
{
	Oid			nspid = InvalidOid;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	work_running = true;
	if (ShutdownRequestPending)
		cancel_work();
	SPI_connect();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
							 true, ERROR, false);
	if (extname != NULL)
		nspid = pgs_db_work_extension(extname, extoid);
	PushActiveSnapshot(GetTransactionSnapshot());
	return nspid;
}

/*
 * No cancel may outlive the transaction: one left pending would be raised
 * where no handler catches it.  The shutdown it stood for stays in
 * ShutdownRequestPending.  work_running is cleared first, so that a SIGTERM
 * arriving in between cannot set the cancel again.
 */
static void
work_done(void)
{
	work_running = false;
	QueryCancelPending = false;
}

/* Commit the worker's transaction. */
void
pgs_db_work_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	work_done();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Roll the worker's transaction back, from its error handler (after
 * FlushErrorState()).
 */
void
pgs_db_work_abort(void)
{
	work_done();
	AbortCurrentTransaction();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Called by the sampler after each sample: launch the worker of l if it
 * is not running and its delay has passed.  healthy says the running
 * worker does its work (its next exit is relaunched after the shortest
 * delay).  Returns what happened.
 */
PgsLaunch
pgs_supervise_db_worker(PgsWorkerLauncher *l, bool healthy)
{
	BackgroundWorker worker;
	pid_t		pid;
	TimestampTz now;

	if (l->delay_ms == 0)
		l->delay_ms = RELAUNCH_MIN_MS;
	if (l->handle != NULL &&
		GetBackgroundWorkerPid(l->handle, &pid) != BGWH_STOPPED)
	{
		if (healthy)
			l->delay_ms = RELAUNCH_MIN_MS;
		return PGS_LAUNCH_RUNNING;
	}
	now = GetCurrentTimestamp();
	if (l->handle != NULL)
	{
		pfree(l->handle);
		l->handle = NULL;
		l->next_launch = TimestampTzPlusMilliseconds(now, l->delay_ms);
		l->delay_ms = Min(l->delay_ms * 2, RELAUNCH_MAX_MS);
		return PGS_LAUNCH_EXITED;
	}
	if (now < l->next_launch)
		return PGS_LAUNCH_WAITING;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pgsentinel");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", l->function);
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", l->name);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", l->name);
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &l->handle))
	{
		l->handle = NULL;
		l->next_launch = TimestampTzPlusMilliseconds(now, l->delay_ms);
		l->delay_ms = Min(l->delay_ms * 2, RELAUNCH_MAX_MS);
		return PGS_LAUNCH_NO_SLOT;
	}
	return PGS_LAUNCH_LAUNCHED;
}

/* Set one setting for the worker's whole session. */
void
pgs_db_worker_set(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, WARNING, false);
}

/*
 * Connect the worker to pgsentinel.db_name (FATAL if the database does not
 * exist or refuses connections: the sampler reports it) under appname.  Its
 * own statements are not worth tracking in pg_stat_statements, and it
 * never waits long for a lock: a reading or an archiving can then never
 * hold a shutdown or a user's DDL up.
 */
void
pgs_db_worker_connect(const char *appname)
{
	BackgroundWorkerInitializeConnection(pgs_db_name, NULL, 0);
	pgstat_report_appname(appname);
	pgs_db_worker_set("pg_stat_statements.track", "none");
	pgs_db_worker_set("lock_timeout", DB_WORKER_LOCK_TIMEOUT);
}
