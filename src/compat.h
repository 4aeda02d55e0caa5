/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the supported PostgreSQL versions (15 to 18).
 *
 * Logic code calls the small wrappers below and never tests
 * PG_VERSION_NUM itself.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSENTINEL_COMPAT_H
#define PGSENTINEL_COMPAT_H

#include "catalog/pg_namespace.h"
#include "executor/executor.h"
#include "optimizer/pathnode.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/wait_event.h"

#if PG_VERSION_NUM < 150000
#error "pgsentinel needs PostgreSQL 15 or later"
#endif

#if PG_VERSION_NUM >= 160000
#include "nodes/queryjumble.h"
#else
#include "utils/queryjumble.h"
#endif

/*
 * Query identifiers: uint64 up to 17, int64 from 18 on.  We store them as
 * uint64 and show them as bigint, as pg_stat_statements does.
 */
#define pgs_queryid_from(q) ((uint64) (q))

/* The PGPROC index of the current backend. */
static inline int
pgs_my_proc_number(void)
{
#if PG_VERSION_NUM >= 170000
	return MyProcNumber;
#else
	return MyProc ? MyProc->pgprocno : -1;
#endif
}

/* The PGPROC index of a PGPROC. */
static inline int
pgs_proc_number(PGPROC *proc)
{
#if PG_VERSION_NUM >= 170000
	return GetNumberFromPGProc(proc);
#else
	return proc->pgprocno;
#endif
}

/*
 * Entries of core's shared "Backend Status Array" (one per PGPROC of a
 * backend or auxiliary process), to find it by name and size.
 */
static inline int
pgs_backend_status_slots(void)
{
#if PG_VERSION_NUM >= 170000
	return MaxBackends + NUM_AUXILIARY_PROCS;
#else
	return MaxBackends + NUM_AUXPROCTYPES;
#endif
}

/*
 * The PGPROC number of the session in a backend-status slot, as far as it
 * can be known without looking (-1: unknown).  From PostgreSQL 17 a
 * process's status entry is the one of its PGPROC number; before, regular
 * backends use their BackendId, which PGPROC does not index.
 */
static inline int
pgs_status_slot_procno(int slot)
{
#if PG_VERSION_NUM >= 170000
	return slot < (int) ProcGlobal->allProcCount ? slot : -1;
#else
	return -1;
#endif
}

/* Entry idx (1-based) of the local backend-status snapshot. */
static inline LocalPgBackendStatus *
pgs_local_beentry(int idx)
{
#if PG_VERSION_NUM >= 160000
	return pgstat_get_local_beentry_by_index(idx);
#else
	return pgstat_fetch_stat_local_beentry(idx);
#endif
}

/* The wait event the worker reports while sleeping between samples. */
static inline uint32
pgs_worker_wait_event(void)
{
#if PG_VERSION_NUM >= 170000
	static uint32 wait_event_info = 0;

	if (wait_event_info == 0)
		wait_event_info = WaitEventExtensionNew("PgSentinelMain");
	return wait_event_info;
#else
	return PG_WAIT_EXTENSION;
#endif
}

#if PG_VERSION_NUM < 160000
/* SHMQueueNext(), inline: the sampler walks lock queues with it. */
static inline void *
pgs_shm_queue_next(const SHM_QUEUE *queue, const SHM_QUEUE *cur, Size offset)
{
	SHM_QUEUE  *next = cur->next;

	return next == queue ? NULL : (void *) ((char *) next - offset);
}
#endif

/*
 * Walking a heavyweight lock's PROCLOCKs and its wait queue, in list order
 * (the caller holds the lock's partition lock).  SHM_QUEUE up to 15,
 * dlist/dclist from 16 on.  Each returns NULL after the last element.
 */
static inline PROCLOCK *
pgs_lock_first_proclock(LOCK *lock)
{
#if PG_VERSION_NUM >= 160000
	if (dlist_is_empty(&lock->procLocks))
		return NULL;
	return dlist_container(PROCLOCK, lockLink, dlist_head_node(&lock->procLocks));
#else
	return (PROCLOCK *) pgs_shm_queue_next(&lock->procLocks, &lock->procLocks,
										   offsetof(PROCLOCK, lockLink));
#endif
}

static inline PROCLOCK *
pgs_lock_next_proclock(LOCK *lock, PROCLOCK *proclock)
{
#if PG_VERSION_NUM >= 160000
	if (!dlist_has_next(&lock->procLocks, &proclock->lockLink))
		return NULL;
	return dlist_container(PROCLOCK, lockLink,
						   dlist_next_node(&lock->procLocks, &proclock->lockLink));
#else
	return (PROCLOCK *) pgs_shm_queue_next(&lock->procLocks, &proclock->lockLink,
										   offsetof(PROCLOCK, lockLink));
#endif
}

static inline PGPROC *
pgs_lock_first_waiter(LOCK *lock)
{
#if PG_VERSION_NUM >= 160000
	if (dclist_is_empty(&lock->waitProcs))
		return NULL;
	return dlist_container(PGPROC, links, dclist_head_node(&lock->waitProcs));
#else
	return (PGPROC *) pgs_shm_queue_next(&lock->waitProcs.links,
										 &lock->waitProcs.links,
										 offsetof(PGPROC, links));
#endif
}

static inline PGPROC *
pgs_lock_next_waiter(LOCK *lock, PGPROC *proc)
{
#if PG_VERSION_NUM >= 160000
	if (!dclist_has_next(&lock->waitProcs, &proc->links))
		return NULL;
	return dlist_container(PGPROC, links,
						   dclist_next_node(&lock->waitProcs, &proc->links));
#else
	return (PGPROC *) pgs_shm_queue_next(&lock->waitProcs.links, &proc->links,
										 offsetof(PGPROC, links));
#endif
}

/* May role create objects in schema nspid?  (16 generalised the check.) */
static inline bool
pgs_schema_create_allowed(Oid nspid, Oid roleid)
{
#if PG_VERSION_NUM >= 160000
	return object_aclcheck(NamespaceRelationId, nspid, roleid, ACL_CREATE) == ACLCHECK_OK;
#else
	return pg_namespace_aclcheck(nspid, roleid, ACL_CREATE) == ACLCHECK_OK;
#endif
}

/* An unparameterized, unsorted foreign scan path (17 and 18 added arguments). */
static inline ForeignPath *
pgs_create_foreignscan_path(PlannerInfo *root, RelOptInfo *rel, double rows,
							Cost startup_cost, Cost total_cost)
{
#if PG_VERSION_NUM >= 180000
	return create_foreignscan_path(root, rel, NULL, rows, 0, startup_cost,
								   total_cost, NIL, NULL, NULL, NIL, NIL);
#elif PG_VERSION_NUM >= 170000
	return create_foreignscan_path(root, rel, NULL, rows, startup_cost,
								   total_cost, NIL, NULL, NULL, NIL, NIL);
#else
	return create_foreignscan_path(root, rel, NULL, rows, startup_cost,
								   total_cost, NIL, NULL, NULL, NIL);
#endif
}

/*
 * A hint that *addr will be read soon, so that independent cache misses of
 * a sample overlap instead of being paid one after the other.
 */
#if defined(__GNUC__) || defined(__clang__)
#define pgs_prefetch(addr)	__builtin_prefetch(addr)
#else
#define pgs_prefetch(addr)	((void) (addr))
#endif

#endif							/* PGSENTINEL_COMPAT_H */
