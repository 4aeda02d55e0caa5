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
 * partition and by lock; each partition lock is taken once, in shared mode,
 * and never two at a time; each awaited lock's PROCLOCKs and wait queue are
 * read once into local arrays; then each waiter's blockers are derived from
 * those arrays with exactly pg_blocking_pids()'s rules:
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
 * under the lock.
 *
 * A waiter that belongs to a lock group (a parallel query), or whose state
 * changed between the unlocked look and the locked one, is handed to core's
 * pg_blocking_pids(), after every partition lock has been released.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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

/* Scratch space, sized for every PGPROC once (see pgs_blockers_init). */
static LockInstance *instances = NULL;
static int *queue_pos_of = NULL;	/* by PGPROC number */
static uint32 *queue_pos_gen = NULL;	/* valid if == queue_gen */
static uint32 queue_gen = 0;
static int	max_instances = 0;

/* Output buffer of the current call: pids, grown as needed. */
static int32 *out_pids = NULL;
static int	out_used = 0;
static int	out_size = 0;

void
pgs_blockers_init(void)
{
	max_instances = ProcGlobal->allProcCount;
	instances = MemoryContextAlloc(TopMemoryContext,
								   sizeof(LockInstance) * max_instances);
	queue_pos_of = MemoryContextAlloc(TopMemoryContext,
									  sizeof(int) * max_instances);
	queue_pos_gen = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(uint32) * max_instances);
}

/* Order waiters by partition, then by awaited lock; unresolved last. */
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

/*
 * Read the PROCLOCKs and the wait queue of a lock into instances[].
 * Returns the number of instances.  Caller holds the partition lock.
 */
static int
read_lock(LOCK *lock)
{
	int			n = 0;
	int			pos = 0;
	PROCLOCK   *proclock;
	PGPROC	   *proc;

	/* wait-queue positions, by PGPROC number, valid for this generation */
	if (++queue_gen == 0)
	{
		memset(queue_pos_gen, 0, sizeof(uint32) * max_instances);
		queue_gen = 1;
	}
	for (proc = pgs_lock_first_waiter(lock); proc != NULL;
		 proc = pgs_lock_next_waiter(lock, proc))
	{
		int			procno = pgs_proc_number(proc);

		queue_pos_of[procno] = pos++;
		queue_pos_gen[procno] = queue_gen;
	}

	for (proclock = pgs_lock_first_proclock(lock); proclock != NULL;
		 proclock = pgs_lock_next_proclock(lock, proclock))
	{
		LockInstance *inst = &instances[n];
		int			procno;

		/* one PROCLOCK per process and lock: cannot exceed, but be sure */
		if (n == max_instances)
			break;
		inst->proc = proclock->tag.myProc;
		inst->leader_pid = proclock->groupLeader->pid;
		inst->hold_mask = proclock->holdMask;
		inst->wait_mode = inst->proc->waitLock == lock ?
			inst->proc->waitLockMode : NoLock;
		procno = pgs_proc_number(inst->proc);
		inst->queue_pos = queue_pos_gen[procno] == queue_gen ?
			queue_pos_of[procno] : -1;
		n++;
	}
	return n;
}

/*
 * The blockers of one waiter of the lock read into instances[0..n-1].
 * Returns false if the waiter is not found as expected.
 */
static bool
blockers_of(PgsLockWaiter *w, LOCK *lock, int n, LockMethod method)
{
	PGPROC	   *proc = w->proc;
	LockInstance *self = NULL;
	int			conflict_mask;
	int			i;

	if (proc->waitLock != lock || proc->pid != w->pid ||
		proc->lockGroupLeader != NULL)
		return false;
	for (i = 0; i < n; i++)
	{
		if (instances[i].proc == proc)
		{
			self = &instances[i];
			break;
		}
	}
	if (self == NULL || self->queue_pos < 0)
		return false;

	conflict_mask = method->conflictTab[proc->waitLockMode];
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
	return true;
}

/* The waiters of one partition, waiters[from..to-1]; lock held by caller. */
static void
resolve_partition(PgsLockWaiter *waiters, int from, int to, int partition)
{
	int			i = from;

	while (i < to)
	{
		LOCK	   *lock = waiters[i].lock;
		int			end = i;
		int			n = 0;
		LockMethod	method = NULL;
		bool		lock_ok;

		while (end < to && waiters[end].lock == lock)
			end++;

		/* the lock object may have been recycled since the first look */
		lock_ok = LockHashPartition(LockTagHashCode(&lock->tag)) == partition;
		if (lock_ok)
		{
			method = GetLockTagsMethodTable(&lock->tag);
			n = read_lock(lock);
		}
		for (; i < end; i++)
			waiters[i].resolved = lock_ok &&
				blockers_of(&waiters[i], lock, n, method);
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

	i = 0;
	while (i < nwaiters)
	{
		int			partition = waiters[i].partition;
		int			end = i;

		while (end < nwaiters && waiters[end].partition == partition)
			end++;
		if (partition >= 0 && partition < NUM_LOCK_PARTITIONS)
		{
			LWLock	   *plock = LockHashPartitionLockByIndex(partition);

			LWLockAcquire(plock, LW_SHARED);
			resolve_partition(waiters, i, end, partition);
			LWLockRelease(plock);
		}
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
