/*-------------------------------------------------------------------------
 *
 * db_worker.h
 *		What the two workers that connect to pgsentinel.db_name (the
 *		statements worker and the archiver) share: their launch and
 *		relaunch by the sampler, their session, their transactions, and
 *		SIGTERM (db_worker.c); the size of their status message in shared
 *		memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_DB_WORKER_H
#define PGS_DB_WORKER_H

#include "datatype/timestamp.h"
#include "postmaster/bgworker.h"

/* A worker's status message in shared memory (statements worker, archiver). */
#define PGS_MESSAGE_LEN 256

/* The sampler's handle on one of these workers. */
typedef struct PgsWorkerLauncher
{
	const char *function;		/* entry point in the library */
	const char *name;			/* bgw_name and bgw_type */
	BackgroundWorkerHandle *handle;
	TimestampTz next_launch;
	int			delay_ms;
} PgsWorkerLauncher;

typedef enum PgsLaunch
{
	PGS_LAUNCH_RUNNING,			/* running, or about to start */
	PGS_LAUNCH_EXITED,			/* it exited: launched again after a delay */
	PGS_LAUNCH_WAITING,			/* waiting for the delay to pass */
	PGS_LAUNCH_NO_SLOT,			/* no background worker slot was free */
	PGS_LAUNCH_LAUNCHED
} PgsLaunch;

/* db_worker.c */
extern PgsLaunch pgs_supervise_db_worker(PgsWorkerLauncher *l, bool healthy);
extern void pgs_db_worker_connect(const char *appname);
extern void pgs_db_worker_set(const char *name, const char *value);
extern void pgs_db_worker_sigterm(SIGNAL_ARGS);
extern Oid	pgs_db_work_begin(const char *extname, Oid *extoid);
extern Oid	pgs_db_work_extension(const char *extname, Oid *extoid);
extern Oid	pgs_extension_schema(Oid extoid);
extern void pgs_db_work_commit(void);
extern void pgs_db_work_abort(void);

#endif							/* PGS_DB_WORKER_H */
