/*-------------------------------------------------------------------------
 *
 * blockers.c
 *		The blockers of every heavyweight-lock waiter of a sample, found in
 *		one pass over the lock manager.
 *
 * pg_blocking_pids() takes all NUM_LOCK_PARTITIONS partition locks and
 * ProcArrayLock for every call, and copies the whole PROCLOCK list and wait
 * queue of the awaited lock each time: called once per waiter, its cost
 * grows with the square of the queue on a hot row.  Here the waiters of one sample are grouped by the
 * LOCK they await.  For each awaited lock its partition lock is taken in
 * shared mode (never two at a time) just long enough to check its waiters
 * and copy the lock's PROCLOCKs and wait queue into local arrays; the
 * blockers of every waiter are then derived from the copy, after releasing
 * it, with exactly pg_blocking_pids()'s rules:
 *
 *	- hard blocker: another PROCLOCK of the lock whose granted modes conflict
 *	  with the waiter's requested mode;
 *	- soft blocker: a process ahead of the waiter in the lock's wait queue
 *	  requesting a conflicting mode;
 *	- members of the waiter's lock group never block it; each blocker is
 *	  reported as its lock group leader's pid, in PROCLOCK list order.
 *
 * The answer itself grows with the square of a queue: on one hot row each
 * waiter's list names every conflicting waiter ahead of it.  But those
 * lists are usually prefixes of one list: the PROCLOCKs that can block a
 * given requested mode at all ("candidates"), in PROCLOCK order, which is
 * the order the processes asked for the lock.  So the candidates of each
 * (lock, requested mode) are emitted once, and a waiter whose blockers are
 * exactly the candidates listed before its own PROCLOCK gets a prefix of
 * that list: every candidate before it must block it (holds a conflicting
 * mode, or waits ahead of it in the queue) and none after it may (holds no
 * conflicting mode and waits behind it).  Both conditions are checked for
 * all the waiters of a lock in linear time, with the largest queue
 * position of a waiting-only candidate before each place and the smallest
 * one after it.  Lock groups, and waiters that fail the check (a process
 * that upgrades a lock it holds is queued ahead of earlier requesters),
 * get their own list, built one candidate at a time.  Assert-enabled
 * builds compare every prefix with the list built the long way.
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
 * pg_blocking_pids(), after every partition lock has been released (and
 * counted: pgsentinel_status().blockers_via_core).  A backend that once led
 * a parallel query keeps lockGroupLeader pointing at itself for the rest of
 * its life; when its group is itself alone (its workers have left), its
 * waits are an ungrouped process's and are resolved here
 * (leads_itself_alone()).
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
#include "sample/sampler.h"

/* One PROCLOCK of the awaited lock, as far as blocking goes. */
typedef struct LockInstance
{
	PGPROC	   *proc;
	int32		leader_pid;		/* reported in place of the pid */
	bool		grouped;		/* in a lock group led by another process */
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

/*
 * The candidates of one (lock, requested mode), for the prefix check:
 * candidates_before[i] is the number of candidates among instances[0..i-1],
 * is_candidate[i] whether instance i is one; for candidate positions k,
 * max_queue_before[k] is the largest queue position of a waiting-only
 * candidate among the first k (-1: none), and after position k
 * hard_after[k] tells whether a candidate holds a conflicting mode and
 * min_queue_after[k] the smallest queue position of the others.
 */
static int *candidates_before = NULL;
static bool *is_candidate = NULL;
static int *max_queue_before = NULL;
static bool *hard_after = NULL;
static int *min_queue_after = NULL;

/* Grouping of the waiters by awaited LOCK: an open-addressing table. */
static LOCK **lock_key = NULL;
static int *lock_group = NULL;
static uint32 *lock_gen = NULL;
static uint32 lock_table_gen = 0;
static uint32 lock_table_mask = 0;
static int *group_size = NULL;

/* Output buffer of the current call: pids, grown as needed. */
static int32 *out_pids = NULL;
static int	out_used = 0;
static int	out_size = 0;

void
pgs_blockers_init(void)
{
	uint32		size = 64;

	max_procs = ProcGlobal->allProcCount + max_prepared_xacts;
	instances = MemoryContextAlloc(TopMemoryContext,
								   sizeof(LockInstance) * max_procs);
	queue_pos_of = MemoryContextAlloc(TopMemoryContext, sizeof(int) * max_procs);
	instance_of = MemoryContextAlloc(TopMemoryContext, sizeof(int) * max_procs);
	queue_pos_gen = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(uint32) * max_procs);
	instance_gen = MemoryContextAllocZero(TopMemoryContext,
										  sizeof(uint32) * max_procs);
	candidates_before = MemoryContextAlloc(TopMemoryContext,
										   sizeof(int) * (max_procs + 1));
	is_candidate = MemoryContextAlloc(TopMemoryContext,
									  sizeof(bool) * (max_procs + 1));
	max_queue_before = MemoryContextAlloc(TopMemoryContext,
										  sizeof(int) * (max_procs + 1));
	hard_after = MemoryContextAlloc(TopMemoryContext,
									sizeof(bool) * (max_procs + 1));
	min_queue_after = MemoryContextAlloc(TopMemoryContext,
										 sizeof(int) * (max_procs + 1));

	while (size < 2 * (uint32) max_procs)
		size *= 2;
	lock_key = MemoryContextAlloc(TopMemoryContext, sizeof(LOCK *) * size);
	lock_group = MemoryContextAlloc(TopMemoryContext, sizeof(int) * size);
	lock_gen = MemoryContextAllocZero(TopMemoryContext, sizeof(uint32) * size);
	lock_table_mask = size - 1;
	group_size = MemoryContextAlloc(TopMemoryContext, sizeof(int) * (max_procs + 1));
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
		inst->grouped = proclock->groupLeader != inst->proc;
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
 * Does this process lead a lock group of itself alone?  pg_blocking_pids()
 * reports the blockers of every waiting member of a group; with no member
 * but the leader its answer is that of an ungrouped process.  The group's
 * fields are protected by the leader's partition lock, taken here in
 * shared mode and alone: before the awaited lock's partition lock, never
 * nested.  A waiting process cannot start a parallel query, so its group
 * can only shrink while it waits; check_waiter() then verifies, under the
 * awaited lock's partition lock, that it still waits for the same lock.
 */
static bool
leads_itself_alone(PGPROC *proc)
{
	LWLock	   *plock = LockHashPartitionLockByProc(proc);
	dlist_head *members = &proc->lockGroupMembers;
	bool		alone;

	LWLockAcquire(plock, LW_SHARED);
	alone = proc->lockGroupLeader == proc && !dlist_is_empty(members) &&
		!dlist_has_next(members, dlist_head_node(members));
	LWLockRelease(plock);
	return alone;
}

/*
 * Under the partition lock: is the waiter still waiting for this lock, as
 * the same process, outside any lock group (or leading one of itself
 * alone), with its own PROCLOCK in the copy and a place in the queue?
 * Records its instance and mode.
 */
static bool
check_waiter(PgsLockWaiter *w, LOCK *lock)
{
	PGPROC	   *proc = w->proc;
	int			procno = proc_index(proc);

	if (procno < 0 || proc->waitLock != lock || proc->pid != w->pid ||
		(proc->lockGroupLeader != NULL &&
		 !(w->alone && proc->lockGroupLeader == proc)) ||
		instance_gen[procno] != map_gen)
		return false;
	w->self = instance_of[procno];
	w->mode = proc->waitLockMode;
	if (instances[w->self].queue_pos < 0)
		return false;
	w->target.field1 = lock->tag.locktag_field1;
	w->target.field2 = lock->tag.locktag_field2;
	w->target.field3 = lock->tag.locktag_field3;
	w->target.field4 = lock->tag.locktag_field4;
	w->target.type = lock->tag.locktag_type + 1;
	w->target.method = lock->tag.locktag_lockmethodid;
	w->target.mode = (uint8) w->mode;
	return true;
}

/*
 * Does instance inst block a waiter whose requested mode conflicts with
 * conflict_mask and whose place in the queue is queue_pos?
 */
static inline bool
blocks(const LockInstance *inst, LOCKMASK conflict_mask, int queue_pos)
{
	return (conflict_mask & inst->hold_mask) ||
		(inst->wait_mode != NoLock &&
		 (conflict_mask & LOCKBIT_ON(inst->wait_mode)) &&
		 inst->queue_pos >= 0 && inst->queue_pos < queue_pos);
}

/* A checked waiter's own blocker list, from the copy (no lock needed). */
static void
blockers_of(PgsLockWaiter *w, int n, LockMethod method)
{
	LockInstance *self = &instances[w->self];
	LOCKMASK	conflict_mask = method->conflictTab[w->mode];
	int			i;

	w->first_blocker = out_used;
	for (i = 0; i < n; i++)
	{
		LockInstance *inst = &instances[i];

		if (inst == self || inst->leader_pid == self->leader_pid)
			continue;
		if (blocks(inst, conflict_mask, self->queue_pos))
		{
			if (w->blocker_inst < 0)
				w->blocker_inst = i;
			emit_pid(inst->leader_pid);
		}
	}
	w->nblockers = out_used - w->first_blocker;
	w->list_len = w->nblockers;
	w->resolved = true;
}

#ifdef USE_ASSERT_CHECKING
/* Is a prefix given to w the list blockers_of() would build? */
static bool
prefix_is_exact(PgsLockWaiter *w, int n, LockMethod method)
{
	PgsLockWaiter slow = *w;
	int			saved = out_used;
	bool		same;

	blockers_of(&slow, n, method);
	same = slow.nblockers == w->nblockers &&
		memcmp(&out_pids[slow.first_blocker], &out_pids[w->first_blocker],
			   sizeof(int32) * w->nblockers) == 0;
	out_used = saved;
	return same;
}
#endif

/*
 * The blockers of the checked, not yet resolved waiters W(first..nw-1)
 * that request the same mode as W(first): the candidates are emitted
 * once, and each waiter whose blockers are a prefix of them gets that
 * prefix (see the top of the file); the others get their own list.
 */
static void
blockers_of_mode(PgsLockWaiter *waiters, const int *ws, int nw, int first,
				 int n, LockMethod method)
{
	LOCKMODE	mode = waiters[ws[first]].mode;
	LOCKMASK	conflict_mask = method->conflictTab[mode];
	int			ncand = 0;
	int			first_cand = -1;
	int			base = out_used;
	bool		any_grouped = false;
	int			i;
	int			k;
	int			j;

	/* the candidates, emitted in PROCLOCK order */
	for (i = 0; i < n; i++)
	{
		LockInstance *inst = &instances[i];

		candidates_before[i] = ncand;
		is_candidate[i] = blocks(inst, conflict_mask, INT_MAX);
		if (!is_candidate[i])
			continue;
		any_grouped |= inst->grouped;
		if (first_cand < 0)
			first_cand = i;
		max_queue_before[ncand + 1] = Max(ncand > 0 ? max_queue_before[ncand] : -1,
										  (conflict_mask & inst->hold_mask) ?
										  -1 : inst->queue_pos);
		emit_pid(inst->leader_pid);
		ncand++;
	}
	max_queue_before[0] = -1;
	hard_after[ncand] = false;
	min_queue_after[ncand] = INT_MAX;

	/* hard_after[k] / min_queue_after[k]: over candidates k .. ncand-1 */
	k = ncand;
	for (i = n - 1; i >= 0; i--)
	{
		LockInstance *inst = &instances[i];

		if (!is_candidate[i])
			continue;
		k--;
		hard_after[k] = hard_after[k + 1] ||
			(conflict_mask & inst->hold_mask) != 0;
		min_queue_after[k] = (conflict_mask & inst->hold_mask) ?
			min_queue_after[k + 1] :
			Min(min_queue_after[k + 1], inst->queue_pos);
	}

	for (j = first; j < nw; j++)
	{
		PgsLockWaiter *w = &waiters[ws[j]];
		LockInstance *self;
		int			before;
		int			after;

		if (w->self < 0 || w->resolved || w->mode != mode)
			continue;
		self = &instances[w->self];
		before = candidates_before[w->self];
		after = before + (is_candidate[w->self] ? 1 : 0);
		if (any_grouped || self->grouped ||
			max_queue_before[before] >= self->queue_pos ||
			hard_after[after] || min_queue_after[after] <= self->queue_pos)
		{
			blockers_of(w, n, method);
			continue;
		}
		w->first_blocker = base;
		w->nblockers = before;
		w->list_len = ncand;
		w->blocker_inst = before > 0 ? first_cand : -1;
		w->resolved = true;
		Assert(prefix_is_exact(w, n, method));
	}
}

/*
 * The waiters W(0..nw-1) of one lock, W(j) being waiters[ws[j]].  The
 * partition lock is held only to check them and copy the lock's lists; the
 * blockers are worked out after releasing it.
 */
static void
resolve_lock(PgsLockWaiter *waiters, const int *ws, int nw)
{
	LOCK	   *lock = waiters[ws[0]].lock;
	int			partition = LockHashPartition(LockTagHashCode(&lock->tag));
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
			live = (waiters[ws[j]].proc->waitLock == lock);
	}
	if (live)
	{
		method = GetLockTagsMethodTable(&lock->tag);
		n = read_lock(lock);
	}
	for (j = 0; j < nw; j++)
	{
		PgsLockWaiter *w = &waiters[ws[j]];

		w->self = (n >= 0 && check_waiter(w, lock)) ? w->self : -1;
	}
	LWLockRelease(plock);

	for (j = 0; j < nw; j++)
	{
		PgsLockWaiter *w = &waiters[ws[j]];

		if (w->self >= 0 && !w->resolved)
			blockers_of_mode(waiters, ws, nw, j, n, method);
	}

	/* what the first blocker holds and awaits, while the copy is this lock's */
	for (j = 0; j < nw; j++)
	{
		PgsLockWaiter *w = &waiters[ws[j]];

		if (w->self >= 0 && w->blocker_inst >= 0)
		{
			w->target.blocker_hold_mask =
				(uint16) instances[w->blocker_inst].hold_mask;
			w->target.blocker_wait_mode =
				(uint8) instances[w->blocker_inst].wait_mode;
		}
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
	w->list_len = n;
	w->resolved = true;
}

/*
 * Fill order[0..nwaiters-1] with the indexes of the waiters so that those
 * of each awaited LOCK are adjacent (in their first-seen order), those
 * waiting for nothing last.  A LOCK pointer is compared, not hashed by its
 * tag: resolve_lock() checks under the partition lock that it is still the
 * awaited lock.
 */
static void
group_by_lock(PgsLockWaiter *waiters, int nwaiters, int *order)
{
	int			ngroups = 0;
	int			start = 0;
	int			i;

	if (++lock_table_gen == 0)
	{
		memset(lock_gen, 0, sizeof(uint32) * (lock_table_mask + 1));
		lock_table_gen = 1;
	}
	for (i = 0; i < nwaiters; i++)
	{
		PgsLockWaiter *w = &waiters[i];
		uint32		h;

		if (w->lock == NULL)
		{
			w->group = -1;		/* placed after every group */
			continue;
		}
		/* the waiters of one hot row come one after the other: no lookup */
		if (i > 0 && w->lock == waiters[i - 1].lock)
		{
			w->group = waiters[i - 1].group;
			group_size[w->group]++;
			continue;
		}
		/* Fibonacci hashing of the pointer */
		h = (uint32) (((uint64) (uintptr_t) w->lock *
					   UINT64CONST(0x9E3779B97F4A7C15)) >> 32) & lock_table_mask;
		while (lock_gen[h] == lock_table_gen && lock_key[h] != w->lock)
			h = (h + 1) & lock_table_mask;
		if (lock_gen[h] != lock_table_gen)
		{
			lock_gen[h] = lock_table_gen;
			lock_key[h] = w->lock;
			lock_group[h] = ngroups;
			group_size[ngroups++] = 0;
		}
		w->group = lock_group[h];
		group_size[w->group]++;
	}

	/* counting sort by group, stable; group_size[g] becomes its next place */
	for (i = 0; i < ngroups; i++)
	{
		int			size = group_size[i];

		group_size[i] = start;
		start += size;
	}
	group_size[ngroups] = start;	/* the ones waiting for nothing */
	for (i = 0; i < nwaiters; i++)
	{
		int			g = waiters[i].group >= 0 ? waiters[i].group : ngroups;

		order[group_size[g]++] = i;
	}
}

/*
 * Find the blockers of waiters[0..nwaiters-1] (pid and proc filled in by
 * the caller, who also fetched ahead, when it saw the lock wait, what is
 * read here of the waiter's PGPROC: waitLock, waitProcLock, waitLockMode,
 * lockGroupLeader, and links for the queue walk).  Afterwards each waiter's blockers are the first
 * w->nblockers pids of pgs_blocker_list(w), valid until the caller's memory
 * context is reset; nblockers 0 means the waiter was not waiting for a lock
 * any more when looked at.  order[0..nwaiters-1] is set to the waiters'
 * indexes lock by lock: waiters of one lock that share a list are adjacent.
 * Returns how many waiters were handed to core's pg_blocking_pids().
 */
int
pgs_find_blockers(PgsLockWaiter *waiters, int nwaiters, int *order)
{
	int			i;
	int			via_core = 0;

	out_pids = NULL;
	out_used = out_size = 0;
	if (nwaiters == 0)
		return 0;

	for (i = 0; i < nwaiters; i++)
	{
		PgsLockWaiter *w = &waiters[i];
		PGPROC	   *proc = w->proc;

		w->lock = *((LOCK *volatile *) &proc->waitLock);
		w->resolved = (w->lock == NULL);	/* not waiting any more */
		w->nblockers = 0;
		w->list_len = 0;
		w->first_blocker = 0;
		w->self = -1;
		w->blocker_inst = -1;
		memset(&w->target, 0, sizeof(w->target));
		w->alone = (*((PGPROC *volatile *) &proc->lockGroupLeader) == proc &&
					w->lock != NULL && leads_itself_alone(proc));
		/* the partition lock will be held to read it (a hint: no lock yet) */
		pgs_prefetch(*((PROCLOCK *volatile *) &proc->waitProcLock));
	}
	group_by_lock(waiters, nwaiters, order);

	/* one awaited lock at a time */
	i = 0;
	while (i < nwaiters && waiters[order[i]].lock != NULL)
	{
		LOCK	   *lock = waiters[order[i]].lock;
		int			end = i + 1;

		while (end < nwaiters && waiters[order[end]].lock == lock)
			end++;
		resolve_lock(waiters, &order[i], end - i);
		i = end;
	}

	for (i = 0; i < nwaiters; i++)
	{
		if (!waiters[i].resolved)
		{
			resolve_with_core(&waiters[i]);
			via_core++;
		}
	}
	return via_core;
}

/*
 * The blockers found for w by the last pgs_find_blockers(): the first
 * w->nblockers pids of the returned list, which is *list_len long and may
 * be shared by other waiters of the same lock (the same pointer).
 */
const int32 *
pgs_blocker_list(const PgsLockWaiter *w, int *list_len)
{
	*list_len = w->list_len;
	return w->nblockers > 0 ? &out_pids[w->first_blocker] : NULL;
}
