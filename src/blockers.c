/*-------------------------------------------------------------------------
 *
 * blockers.c
 *		The blockers of every heavyweight-lock waiter of a sample, found in
 *		one pass over the lock manager.
 *
 * pg_blocking_pids() takes all NUM_LOCK_PARTITIONS partition locks and
 * ProcArrayLock for every call, and copies the whole PROCLOCK list and wait
 * queue of the awaited lock each time: called once per waiter it was 39 %
 * of the sampler's time with 45 waiters, and grew with the square of the
 * queue on a hot row.  Here the waiters of one sample are sorted by lock
 * partition and by awaited lock.  For each awaited lock the partition lock
 * is taken in shared mode (never two at a time) just long enough to check
 * its waiters and copy the lock's PROCLOCKs and wait queue into local
 * arrays; the blockers of every waiter are then derived from the copy,
 * after releasing it, with exactly pg_blocking_pids()'s rules:
 *
 *	- hard blocker: another PROCLOCK of the lock whose granted modes conflict
 *	  with the waiter's requested mode;
 *	- soft blocker: a process ahead of the waiter in the lock's wait queue
 *	  requesting a conflicting mode;
 *	- members of the waiter's lock group never block it; each blocker is
 *	  reported as its lock group leader's pid, in PROCLOCK list order.
 *
 * Why reading without ProcArrayLock is safe: a process's waitLock is set
 * and cleared only under the partition lock of that lock, and a process
 * cannot leave a wait queue, release a lock or exit without that partition
 * lock in exclusive mode.  So once we hold the partition lock in shared
 * mode and see proc->waitLock == lock (and the lock's tag still hashing to
 * this partition), the waiter, its queue and every PROCLOCK of the lock
 * stay as they are until we release it.  The first, unlocked look at
 * proc->waitLock only decides which partition to lock; it is checked again
 * under the lock.  Walks are bounded by the number of PGPROCs and every
 * PGPROC met is checked to be one, so that even a LOCK recycled under
 * another partition (the lock table's free lists can lend entries across
 * partitions when it is full) cannot make us loop or index out of bounds.
 *
 * A waiter that belongs to a lock group (a parallel query), or whose state
 * changed between the unlocked look and the locked one, is handed to core's
 * pg_blocking_pids(), after every partition lock has been released.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/fmgrprotos.h"

#include "compat.h"
#include "pgsentinel.h"

/* One PROCLOCK of the awaited lock, as far as blocking goes. */
typedef struct LockInstance
{
	PGPROC	   *proc;
	int32		leader_pid;		/* reported in place of the pid */
	LOCKMASK	hold_mask;
	LOCKMODE	wait_mode;		/* NoLock unless waiting for this lock */
	int			queue_pos;		/* place in the wait queue, -1 if none */
} LockInstance;

/*
 * Scratch space, sized once for every PGPROC: backends, auxiliary
 * processes and the dummy PGPROCs of prepared transactions (which hold
 * locks, and which ProcGlobal->allProcCount does not count).  The maps by
 * PGPROC number are valid for entries whose generation is map_gen.
 */
static LockInstance *instances = NULL;
static int *queue_pos_of = NULL;
static int *instance_of = NULL;
static uint32 *queue_pos_gen = NULL;
static uint32 *instance_gen = NULL;
static uint32 map_gen = 0;
static int	max_procs = 0;

/* Output buffer of the current call: pids, grown as needed. */
static int32 *out_pids = NULL;
static int	out_used = 0;
static int	out_size = 0;

void
pgs_blockers_init(void)
{
	max_procs = ProcGlobal->allProcCount + max_prepared_xacts;
	instances = MemoryContextAlloc(TopMemoryContext,
								   sizeof(LockInstance) * max_procs);
	queue_pos_of = MemoryContextAlloc(TopMemoryContext, sizeof(int) * max_procs);
	instance_of = MemoryContextAlloc(TopMemoryContext, sizeof(int) * max_procs);
	queue_pos_gen = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(uint32) * max_procs);
	instance_gen = MemoryContextAllocZero(TopMemoryContext,
										  sizeof(uint32) * max_procs);
}

/* Order waiters by partition, then by awaited lock. */
static int
waiter_cmp(const void *a, const void *b)
{
	const PgsLockWaiter *wa = (const PgsLockWaiter *) a;
	const PgsLockWaiter *wb = (const PgsLockWaiter *) b;

	if (wa->partition != wb->partition)
		return wa->partition < wb->partition ? -1 : 1;
	if (wa->lock != wb->lock)
		return (uintptr_t) wa->lock < (uintptr_t) wb->lock ? -1 : 1;
	return 0;
}

static void
emit_pid(int32 pid)
{
	if (out_used == out_size)
	{
		out_size = Max(out_size * 2, 1024);
		out_pids = out_pids ? repalloc(out_pids, sizeof(int32) * out_size)
			: palloc(sizeof(int32) * out_size);
	}
	out_pids[out_used++] = pid;
}

/* A PGPROC's number, or -1 if it is not one of ours to index. */
static inline int
proc_index(PGPROC *proc)
{
	int			procno = pgs_proc_number(proc);

	return procno >= 0 && procno < max_procs ? procno : -1;
}

/*
 * Copy the wait queue and the PROCLOCKs of a lock into instances[] and the
 * maps by PGPROC number.  Returns the number of instances, or -1 if the
 * lists do not look like those of a live lock (longer than there are
 * processes, or naming an unknown PGPROC): then nothing is trusted.
 * Caller holds the partition lock; this only reads and copies.
 */
static int
read_lock(LOCK *lock)
{
	int			n = 0;
	int			pos = 0;
	PROCLOCK   *proclock;
	PGPROC	   *proc;

	if (++map_gen == 0)
	{
		memset(queue_pos_gen, 0, sizeof(uint32) * max_procs);
		memset(instance_gen, 0, sizeof(uint32) * max_procs);
		map_gen = 1;
	}
	for (proc = pgs_lock_first_waiter(lock); proc != NULL;
		 proc = pgs_lock_next_waiter(lock, proc))
	{
		int			procno = proc_index(proc);

		if (procno < 0 || pos >= max_procs)
			return -1;
		queue_pos_of[procno] = pos++;
		queue_pos_gen[procno] = map_gen;
	}

	for (proclock = pgs_lock_first_proclock(lock); proclock != NULL;
		 proclock = pgs_lock_next_proclock(lock, proclock))
	{
		LockInstance *inst = &instances[n];
		int			procno;

		if (n >= max_procs)
			return -1;
		inst->proc = proclock->tag.myProc;
		procno = proc_index(inst->proc);
		if (procno < 0)
			return -1;
		inst->leader_pid = proclock->groupLeader->pid;
		inst->hold_mask = proclock->holdMask;
		inst->wait_mode = inst->proc->waitLock == lock ?
			inst->proc->waitLockMode : NoLock;
		inst->queue_pos = queue_pos_gen[procno] == map_gen ?
			queue_pos_of[procno] : -1;
		instance_of[procno] = n;
		instance_gen[procno] = map_gen;
		n++;
	}
	return n;
}

/*
 * Under the partition lock: is the waiter still waiting for this lock, as
 * the same process, outside any lock group, with its own PROCLOCK in the
 * copy and a place in the queue?  Records its instance and mode.
 */
static bool
check_waiter(PgsLockWaiter *w, LOCK *lock)
{
	PGPROC	   *proc = w->proc;
	int			procno = proc_index(proc);

	if (procno < 0 || proc->waitLock != lock || proc->pid != w->pid ||
		proc->lockGroupLeader != NULL || instance_gen[procno] != map_gen)
		return false;
	w->self = instance_of[procno];
	w->mode = proc->waitLockMode;
	return instances[w->self].queue_pos >= 0;
}

/* A checked waiter's blockers, from the copy (no lock needed). */
static void
blockers_of(PgsLockWaiter *w, int n, LockMethod method)
{
	LockInstance *self = &instances[w->self];
	int			conflict_mask = method->conflictTab[w->mode];
	int			i;

	w->first_blocker = out_used;
	for (i = 0; i < n; i++)
	{
		LockInstance *inst = &instances[i];

		if (inst == self || inst->leader_pid == self->leader_pid)
			continue;
		if ((conflict_mask & inst->hold_mask) ||
			(inst->wait_mode != NoLock &&
			 (conflict_mask & LOCKBIT_ON(inst->wait_mode)) &&
			 inst->queue_pos >= 0 && inst->queue_pos < self->queue_pos))
			emit_pid(inst->leader_pid);
	}
	w->nblockers = out_used - w->first_blocker;
	w->resolved = true;
}

/*
 * The waiters ws[0..nw-1] of one lock.  The partition lock is held only to
 * check them and copy the lock's lists; the blockers are worked out after
 * releasing it.
 */
static void
resolve_lock(PgsLockWaiter *ws, int nw)
{
	LOCK	   *lock = ws[0].lock;
	int			partition = ws[0].partition;
	LWLock	   *plock = LockHashPartitionLockByIndex(partition);
	LockMethod	method = NULL;
	int			n = -1;
	bool		live = false;
	int			j;

	LWLockAcquire(plock, LW_SHARED);

	/*
	 * The LOCK may have been recycled since the first, unlocked look.  It
	 * is the awaited one, live in this partition, if its tag still hashes
	 * here and a waiter still waits on it: only then are its lists walked.
	 */
	if (LockHashPartition(LockTagHashCode(&lock->tag)) == partition)
	{
		for (j = 0; j < nw && !live; j++)
			live = (ws[j].proc->waitLock == lock);
	}
	if (live)
	{
		method = GetLockTagsMethodTable(&lock->tag);
		n = read_lock(lock);
	}
	for (j = 0; j < nw; j++)
		ws[j].self = (n >= 0 && check_waiter(&ws[j], lock)) ? ws[j].self : -1;
	LWLockRelease(plock);

	for (j = 0; j < nw; j++)
	{
		if (ws[j].self >= 0)
			blockers_of(&ws[j], n, method);
	}
}

/* Core's answer, for the waiters that could not be resolved here. */
static void
resolve_with_core(PgsLockWaiter *w)
{
	ArrayType  *arr;
	int			n;
	int32	   *pids;
	int			i;

	arr = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids,
												 Int32GetDatum(w->pid)));
	n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	pids = (int32 *) ARR_DATA_PTR(arr);
	w->first_blocker = out_used;
	for (i = 0; i < n; i++)
		emit_pid(pids[i]);
	w->nblockers = n;
	w->resolved = true;
}

/*
 * Find the blockers of waiters[0..nwaiters-1] (pid and proc filled in by
 * the caller; reorders the array).  Afterwards each waiter's blockers are
 * pgs_blocker_pids(w)[0 .. w->nblockers - 1], valid until the caller's
 * memory context is reset; nblockers 0 means the waiter was not waiting
 * for a lock any more when looked at.
 */
void
pgs_find_blockers(PgsLockWaiter *waiters, int nwaiters)
{
	int			i;

	out_pids = NULL;
	out_used = out_size = 0;
	if (nwaiters == 0)
		return;

	for (i = 0; i < nwaiters; i++)
	{
		PgsLockWaiter *w = &waiters[i];

		w->lock = *((LOCK *volatile *) &w->proc->waitLock);
		w->resolved = false;
		w->nblockers = 0;
		w->first_blocker = 0;
		if (w->lock == NULL)
		{
			w->partition = -1;
			w->resolved = true; /* not waiting any more */
		}
		else if (w->proc->lockGroupLeader != NULL)
			w->partition = NUM_LOCK_PARTITIONS; /* core handles groups */
		else
			w->partition = LockHashPartition(LockTagHashCode(&w->lock->tag));
	}
	if (nwaiters > 1)
		qsort(waiters, nwaiters, sizeof(PgsLockWaiter), waiter_cmp);

	/* one awaited lock at a time */
	i = 0;
	while (i < nwaiters)
	{
		int			end = i + 1;

		while (end < nwaiters && waiters[end].partition == waiters[i].partition &&
			   waiters[end].lock == waiters[i].lock)
			end++;
		if (waiters[i].partition >= 0 && waiters[i].partition < NUM_LOCK_PARTITIONS)
			resolve_lock(&waiters[i], end - i);
		i = end;
	}

	for (i = 0; i < nwaiters; i++)
	{
		if (!waiters[i].resolved)
			resolve_with_core(&waiters[i]);
	}
}

/* The blockers found for w by the last pgs_find_blockers(). */
const int32 *
pgs_blocker_pids(const PgsLockWaiter *w)
{
	return w->nblockers > 0 ? &out_pids[w->first_blocker] : NULL;
}
