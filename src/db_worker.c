/*-------------------------------------------------------------------------
 *
 * db_worker.c
 *		What the two workers that connect to pgsentinel.db_name (the
 *		statements worker and the archiver) share: the sampler launches
 *		each and launches it again when it exits, after a delay that
 *		doubles while it keeps exiting; each opens its session the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "pgsentinel.h"

#define RELAUNCH_MIN_MS			1000
#define RELAUNCH_MAX_MS			(5 * 60 * 1000)
/* A lock on one of our tables or pg_stat_statements is waited for this long. */
#define DB_WORKER_LOCK_TIMEOUT	"10s"

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
