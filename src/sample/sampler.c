/*-------------------------------------------------------------------------
 *
 * sampler.c
 *		The sampler background worker: every sampling period it reads the
 *		sessions (backend_status_reader.c) and the PGPROC wait information
 *		directly (no SQL), keeps the sessions that are active (and idle in
 *		transaction when asked), looks up blockers of heavyweight-lock
 *		waiters only (blockers.c, once for the whole sample), samples the
 *		blockers that were not kept (idle ones: rows of weight 0, never
 *		load), completes the query ids of earlier rows
 *		(queryid_backfill.c), and appends the sample to the ASH ring.
 *
 * A sample is prepared without the lock; publish_sample() is the only place
 * the sampler holds it exclusively, and it only copies and stores there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <malloc.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "archive/archive.h"
#include "compat.h"
#include "guc.h"
#include "pgsentinel.h"
#include "sample/backend_slot.h"
#include "sample/sampler.h"
#include "sample/sessions.h"
#include "statements/pgssh.h"
#include "store/ash_rows.h"
#include "store/ring.h"
#include "store/text_area.h"

/* Sampler state, private to the worker process. */
static MemoryContext sample_cxt = NULL;
static PgsTextBatch *text_batch = NULL;
static PgsBackendSlot *slot_copy = NULL;
static PgsshKey *pgssh_keys = NULL;
static uint64 ash_written = 0;	/* mirror of the ASH ring's written count */
static int64 last_sample_id = 0;	/* mirror of sampler.last_sample_id */
static PgsLockWaiter *lock_waiters = NULL;	/* this sample's, one per slot */
static int *waiter_order = NULL;	/* lock_waiters lock by lock */
static const SessionCopy **waiter_sessions = NULL;	/* of lock_waiters */
static int	nlock_waiters = 0;
static AshRow *sample_rows = NULL;	/* this sample's rows, one per slot */

/* Register the static sampler worker; called from _PG_init. */
void
pgs_register_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 10;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pgsentinel");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "pgsentinel_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pgsentinel sampler");
	snprintf(worker.bgw_type, BGW_MAXLEN, PGS_WORKER_TYPE);
	RegisterBackgroundWorker(&worker);
}

/* The sampling period in microseconds. */
static int64
period_us(void)
{
	return (int64) (pgs_sampling_period * 1000000.0 + 0.5);
}

/* Publish the settings the sampler now runs with. */
static void
publish_settings(void)
{
	(void) pgs_lock_exclusive();
	pgs_state->sampler.period = pgs_sampling_period;
	pgs_state->sampler.track_idle_trans = pgs_track_idle_trans;
	pgs_unlock_exclusive();
}

/* Clear sampler.pid when the worker exits. */
static void
sampler_exit(int code, Datum arg)
{
	if (pgs_state == NULL)
		return;
	(void) pgs_lock_exclusive();
	if (pgs_state->sampler.pid == MyProcPid)
		pgs_state->sampler.pid = 0;
	pgs_unlock_exclusive();
}

/* Map a backend state to ours. */
static uint8
state_of(BackendState st)
{
	switch (st)
	{
		case STATE_RUNNING:
			return PGS_STATE_ACTIVE;
		case STATE_FASTPATH:
			return PGS_STATE_FASTPATH;
		case STATE_IDLEINTRANSACTION:
			return PGS_STATE_IDLE_IN_XACT;
		case STATE_IDLEINTRANSACTION_ABORTED:
			return PGS_STATE_IDLE_IN_XACT_ABORTED;
		case STATE_IDLE:
			return PGS_STATE_IDLE;
		default:
			return PGS_STATE_OTHER;
	}
}

/* One-time setup of the sampler's private memory. */
static void
sampler_init(void)
{
	int			status_slots = pgs_backend_status_slots();

	/*
	 * Every sample allocates and frees the same few hundred kilobytes (the
	 * backend-status snapshot, the rows).  Keep freed memory in the process
	 * instead of giving it back to the kernel and faulting it in again at
	 * the next sample.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);

	sample_cxt = AllocSetContextCreate(TopMemoryContext, "pgsentinel sample",
									   ALLOCSET_DEFAULT_SIZES);
	text_batch = pgs_text_batch_create(TopMemoryContext);
	slot_copy = MemoryContextAlloc(TopMemoryContext, pgs_state->slots.size);
	pgs_backfill_init();
	pgssh_keys = MemoryContextAlloc(TopMemoryContext,
									sizeof(PgsshKey) *
									pgs_state->statements.request_max_keys);
	pgs_status_reader_init();
	pgs_prefault(pgs_ash_rows(),
				 sizeof(AshRow) * (Size) pgs_state->sampler.ash.capacity);
	pgs_prefault(pgs_text_area(), pgs_state->text.size);
	lock_waiters = MemoryContextAlloc(TopMemoryContext,
									  sizeof(PgsLockWaiter) * status_slots);
	waiter_sessions = MemoryContextAlloc(TopMemoryContext,
										 sizeof(SessionCopy *) * status_slots);
	waiter_order = MemoryContextAlloc(TopMemoryContext, sizeof(int) * status_slots);
	sample_rows = MemoryContextAllocHuge(TopMemoryContext,
										 sizeof(AshRow) * status_slots);
	pgs_blockers_init();
	pgssh_sampler_init();

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	ash_written = pgs_ring_written(&pgs_state->sampler.ash);
	last_sample_id = pgs_state->sampler.last_sample_id;
	LWLockRelease(pgs_state->lock);
}

/* Store a C string (or NULL) in the text batch. */
static PgsTextRef
add_text(const char *s, uint64 row_index)
{
	if (s == NULL)
		return PGS_TEXT_NONE;
	return pgs_text_batch_add(text_batch, s, (uint32) strlen(s), row_index);
}

/*
 * A text of a session that the slot's memo may already have stored: its
 * reference is used again while the memo holds one (the caller dropped it
 * when the text was copied anew), else the text is stored and remembered.
 */
static PgsTextRef
memo_text(PgsTextRef *ref, uint32 *len, const char *text, uint64 row_index)
{
	if (pgs_text_batch_reuse(text_batch, *ref, len, row_index))
		return *ref;
	*len = (uint32) strlen(text);
	*ref = pgs_text_batch_add(text_batch, text, *len, row_index);
	return *ref;
}

/*
 * A text that is often the same as the one *last refers to (when last is
 * not NULL): that reference is used again if it still holds these bytes,
 * which spares hashing and the deduplication cache; else the text is
 * stored and *last remembers it.
 */
static PgsTextRef
text_like_last(PgsTextRef *last, const char *data, uint32 len,
			   uint64 row_index)
{
	if (last == NULL)
		return pgs_text_batch_add(text_batch, data, len, row_index);
	if (!pgs_text_batch_reuse_same(text_batch, *last, data, len, row_index))
		*last = pgs_text_batch_add(text_batch, data, len, row_index);
	return *last;
}

/*
 * The blocker list stored last in this sample: the waiters of one lock
 * usually share one list, of which each row shows a prefix (its first
 * AshRow.blockers pids).
 */
typedef struct StoredBlockerList
{
	const int32 *pids;			/* as returned by pgs_blocker_list() */
	int			len;
	PgsTextRef	ref;
} StoredBlockerList;

/*
 * Record the blockers found for a lock waiter's row.  If there are none,
 * the wait may just have ended: the wait event is read again so that a row
 * never shows a lock wait that had already stopped.
 */
static void
fill_blockers(AshRow *row, const PgsLockWaiter *w, const SessionCopy *waiter,
			  uint64 row_index, StoredBlockerList *stored)
{
	int			list_len;
	const int32 *pids = pgs_blocker_list(w, &list_len);
	ActivityMemo *memo = pgs_session_memo(waiter, NULL);
	SessionCopy *blocker;
	uint32		len = list_len * sizeof(int32);

	row->blockers = w->nblockers;
	if (w->nblockers == 0)
	{
		row->wait_event_info = *((volatile uint32 *) &w->proc->wait_event_info);
		return;
	}
	row->blockerpid = pids[0];
	row->lock = w->target;
	blocker = pgs_blocker_session(memo, pids[0]);
	if (blocker != NULL)
	{
		row->blocker_state = state_of(blocker->state);
		row->blocker_usesysid = blocker->userid;
	}

	if (pids == stored->pids && list_len == stored->len &&
		pgs_text_batch_reuse(text_batch, stored->ref, &len, row_index))
		row->blocking_pids = stored->ref;
	else
	{
		/* the list is usually the one this waiter had at the previous sample */
		row->blocking_pids = text_like_last(memo ? &memo->blockers_ref : NULL,
											(const char *) pids, len, row_index);
		stored->pids = pids;
		stored->len = list_len;
		stored->ref = row->blocking_pids;
	}
	if (memo != NULL)
		memo->blockers_ref = row->blocking_pids;
}

/* What fill_row() starts every row from. */
static const AshRow zero_row;

/*
 * Build the row of one session to be sampled.  Returns its PGPROC (NULL if
 * it has none any more).
 */
static PGPROC *
fill_row(AshRow *row, const SessionCopy *local, uint64 row_index,
		 int64 sample_id, TimestampTz now)
{
	ActivityMemo *memo = NULL;
	PGPROC	   *proc;
	bool		have_slot = false;
	char	   *appname;
	char	   *hostname;
	char	   *activity;

	Assert(local->sampled);
	/* vector stores: a memset of this size is a "rep stos", slow to start */
	memcpy(row, &zero_row, sizeof(AshRow));
	row->sample_id = sample_id;
	row->ash_time = now;
	row->pid = local->pid;
	row->state = state_of(local->state);
	row->backend_type = (uint8) local->backend_type;
	row->datid = local->datid;
	row->usesysid = local->userid;
	row->backend_start = local->proc_start;
	row->xact_start = local->xact_start;
	row->query_start = local->activity_start;
	row->state_change = local->state_start;
	row->queryid = local->query_id;
	row->nested_queryid = row->queryid;
	row->client_family = local->client_family;
	row->client_port = local->client_port;
	if (local->client_family != 0)
		memcpy(row->client_addr, local->client_addr, sizeof(row->client_addr));

	proc = pgs_session_proc(local);
	if (proc != NULL)
	{
		row->wait_event_info = *((volatile uint32 *) &proc->wait_event_info);
		row->backend_xid = *((volatile TransactionId *) &proc->xid);
		row->backend_xmin = *((volatile TransactionId *) &proc->xmin);
		/* only parallel workers (background workers) have another leader */
		if (local->backend_type == B_BG_WORKER)
		{
			PGPROC	   *leader = proc->lockGroupLeader;

			if (leader != NULL && leader != proc)
				row->leader_pid = leader->pid;
		}
		have_slot = pgs_read_backend_slot(pgs_proc_number(proc), row->pid,
										  slot_copy);
	}

	/* pointers only: a buffer is read when its text has to be stored */
	pgs_session_texts(local, &appname, &hostname, &activity);
	if (local->has_hostname)
		row->client_hostname = add_text(hostname, row_index);
	if (local->backend_type == B_BG_WORKER)
		row->backend_type_name = add_text(GetBackgroundWorkerTypeByPid(row->pid),
										  row_index);
	if (local->status_slot >= 0)
	{
		/* texts stored once per statement, and per application name */
		CopyOrigin *origin;

		memo = pgs_session_memo(local, &origin);
		row->application_name = memo_text(&memo->appname_ref,
										   &origin->appname_len,
										   appname, row_index);
		row->top_level_query = memo_text(&memo->ref, &origin->len,
										 activity, row_index);
	}
	else
	{
		row->application_name = add_text(appname, row_index);
		row->top_level_query = add_text(activity, row_index);
	}
	row->query = row->top_level_query;
	if (have_slot)
	{
		if (slot_copy->nested)
		{
			const char *text = slot_copy->text;
			uint32		len = slot_copy->text_len;

			row->nested_queryid = slot_copy->exec_queryid;
			row->cmdtype = slot_copy->exec_cmdtype;
			/* a function's statements repeat: try the last one first */
			row->query = text_like_last(memo ? &memo->nested_ref : NULL,
										text, len, row_index);
		}
		else if (slot_copy->top_queryid == row->queryid)
			row->cmdtype = slot_copy->top_cmdtype;
	}

	return proc;
}

/*
 * Note a row waiting for a heavyweight lock: its blockers are looked up for
 * the whole sample at once.
 */
static void
note_lock_waiter(const AshRow *row, const SessionCopy *local, PGPROC *proc,
				 uint64 row_index)
{
	PgsLockWaiter *w = &lock_waiters[nlock_waiters];

	if ((row->wait_event_info & 0xFF000000) != PG_WAIT_LOCK || proc == NULL)
		return;
	waiter_sessions[nlock_waiters] = local;
	nlock_waiters++;
	w->proc = proc;
	w->pid = row->pid;
	w->row = (int) (row_index - ash_written);
	/* what pgs_find_blockers() will read of it (links: the queue walk) */
	pgs_prefetch(&proc->links);
	pgs_prefetch(&proc->waitLock);
	pgs_prefetch(&proc->waitLockMode);
	pgs_prefetch(&proc->lockGroupLeader);
}

/*
 * Sample the sessions that block a sampled one but were not to be sampled
 * themselves -- idle in transaction (the usual root of a lock pile-up) or
 * idle holding a session lock -- so that every blocker is named whole:
 * role, application, client, last statement, transaction start.  Their
 * rows are not load (pgs_row_weight).  A blocker that has become active
 * since it was read is left to the next sample, which records it as it
 * records every active session (pgs_complete_session).  Appends to
 * rows[nrows..]; returns the new count.
 */
static int
sample_blockers(AshRow *rows, int nrows, int64 sample_id, TimestampTz now,
				int64 period)
{
	SessionCopy **added;
	int			nadded = 0;
	int			i;

	/* most samples have no lock waiter */
	if (nlock_waiters == 0)
		return nrows;
	/* in the sample's memory: a session is added once */
	added = palloc(sizeof(SessionCopy *) * pgs_backend_status_slots());
	for (i = 0; i < nlock_waiters; i++)
	{
		const PgsLockWaiter *w = &lock_waiters[i];
		int			list_len;
		const int32 *pids = pgs_blocker_list(w, &list_len);
		int			j;

		for (j = 0; j < w->nblockers; j++)
		{
			SessionCopy *s = pgs_session_by_pid(pids[j]);

			if (s == NULL || s->sampled || s->pid == MyProcPid ||
				!pgs_complete_session(s))
				continue;
			/* one row a sample: marked sampled until the sample is taken */
			s->sampled = true;
			added[nadded++] = s;
			(void) fill_row(&rows[nrows], s, ash_written + nrows, sample_id, now);
			rows[nrows].period_us = (uint32) period;
			nrows++;
		}
	}
	for (i = 0; i < nadded; i++)
		added[i]->sampled = false;
	return nrows;
}

/*
 * Copy the prepared sample into the ring: the only place the sampler holds
 * the lock exclusively.  Copies and stores only.
 */
static void
publish_sample(const AshRow *rows, int nrows, int nactive,
			   const PgsBackfill *fills, int nfills, int nkeys, bool sweep,
			   int via_core, int64 sample_id, TimestampTz now, int64 period,
			   TimestampTz started)
{
	int64		sample_us = GetCurrentTimestamp() - started;
	int64		lock_wait_us;
	Latch	   *wake_archiver = NULL;
	PgsSampleRow sample;
	TimestampTz pending_time;
	int64		pending_id =
		pgs_oldest_pending_sample(&pending_time,
								  TimestampTzPlusMilliseconds(now, -PGS_ARCHIVE_HOLD_MAX_MS));

	memset(&sample, 0, sizeof(sample));
	sample.sample_id = sample_id;
	sample.sample_time = now;
	sample.period_us = period;
	sample.nrows = nrows;
	sample.nactive = nactive;

	lock_wait_us = pgs_lock_exclusive();

	pgs_text_batch_publish(text_batch);

	/*
	 * pgsentinel_reset() ran while this sample was prepared: it may use
	 * texts readers no longer show, and it was taken before the reset, so
	 * it is hidden with the rows before it (and its statements rows).
	 */
	if (pgs_text_batch_reset_missed(text_batch))
	{
		pg_atomic_write_u64(&pgs_state->reset.sample_id, (uint64) sample_id);
		pgs_ring_hide_before(&pgs_state->sampler.ash, ash_written + nrows);
		pgs_ring_hide_before(&pgs_state->sampler.samples,
							 pgs_ring_written(&pgs_state->sampler.samples) + 1);
	}

	pgs_ring_append(&pgs_state->sampler.ash, rows, (uint64) nrows);
	pgs_ring_append(&pgs_state->sampler.samples, &sample, 1);
	ash_written += nrows;
	pgs_state->sampler.last_sample_id = sample_id;

	pgs_apply_backfills(fills, nfills, ash_written);
	pgs_state->sampler.pending_sample_id = pending_id;
	pgs_state->sampler.pending_sample_time = pending_time;

	pgssh_publish_request_locked(pgssh_keys, nkeys, sweep, sample_id, now);

	pgs_state->sampler.blockers_via_core += via_core;
	pgs_state->sampler.samples_taken++;
	pgs_state->sampler.last_sample_time = now;
	pgs_state->sampler.last_sample_us = sample_us;
	if (sample_us > pgs_state->sampler.max_sample_us)
		pgs_state->sampler.max_sample_us = sample_us;
	if (lock_wait_us > pgs_state->sampler.max_lock_wait_us)
		pgs_state->sampler.max_lock_wait_us = lock_wait_us;

	/* a quarter of the text area or of the ring not archived yet */
	wake_archiver =
		pgs_archiver_wake_due(pg_atomic_read_u64(&pgs_state->text.head),
							  pgs_state->text.size,
							  pgs_state->archiver.text_head,
							  &pgs_state->archiver.text_woken);
	if (wake_archiver == NULL)
		wake_archiver =
			pgs_archiver_wake_due(pgs_ring_written(&pgs_state->sampler.ash),
								  pgs_state->sampler.ash.capacity,
								  pgs_state->archiver.ash_head,
								  &pgs_state->archiver.ash_woken);
	pgs_unlock_exclusive();

	if (wake_archiver != NULL)
		SetLatch(wake_archiver);
}

/* Take one sample stamped now. */
static void
take_sample(TimestampTz now)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(sample_cxt);
	TimestampTz started = GetCurrentTimestamp();
	AshRow	   *rows;
	SessionCopy *sessions;
	const int  *sampled;
	int			nsampled;
	PgsBackfill *fills;
	int			nrows = 0;
	int			nfills;
	int			nkeys;
	bool		sweep;
	int			via_core;
	bool		query_ids_on;
	int64		sample_id = last_sample_id + 1;
	int64		period = period_us();
	StoredBlockerList stored_list = {NULL, 0, PGS_TEXT_NONE};
	PGPROC	   *proc;
	int			nactive = 0;
	int			i;

	nsampled = pgs_read_sessions(&sessions, &sampled);

	rows = sample_rows;
	pgs_text_batch_reset(text_batch);

	nfills = pgs_find_backfills(&fills, ash_written, sample_id);

	/*
	 * With compute_query_id = off no statement gets one: its rows are not
	 * remembered (every active row would be, for as long as it runs).
	 */
	query_ids_on = IsQueryIdEnabled();

	nlock_waiters = 0;
	for (i = 0; i < nsampled; i++)
	{
		AshRow	   *row = &rows[nrows];
		uint64		row_index = ash_written + nrows;

		proc = fill_row(row, &sessions[sampled[i]], row_index, sample_id, now);
		row->period_us = (uint32) period;
		note_lock_waiter(row, &sessions[sampled[i]], proc, row_index);
		nrows++;

		/* remember rows whose statement has no query id or type yet */
		if ((row->queryid == 0 || row->cmdtype == PGS_CMD_UNKNOWN) &&
			row->query_start != 0 &&
			row->backend_type == B_BACKEND && query_ids_on &&
			pgs_room_for_pending())
			pgs_remember_pending(row, &sessions[sampled[i]], row_index);
	}

	via_core = pgs_find_blockers(lock_waiters, nlock_waiters, waiter_order);
	for (i = 0; i < nlock_waiters; i++)
	{
		PgsLockWaiter *w = &lock_waiters[waiter_order[i]];

		fill_blockers(&rows[w->row], w, waiter_sessions[waiter_order[i]],
					  ash_written + w->row, &stored_list);
	}
	nrows = sample_blockers(rows, nrows, sample_id, now, period);
	for (i = 0; i < nrows; i++)
		nactive += pgs_row_weight(&rows[i]) > 0;

	nkeys = pgssh_collect_keys(rows, nrows, pgssh_keys);
	sweep = pgssh_sweep_due(now);
	publish_sample(rows, nrows, nactive, fills, nfills, nkeys, sweep, via_core,
				   sample_id, now, period, started);
	last_sample_id = sample_id;
	if (nkeys > 0 || sweep)
		pgssh_notify();

	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(sample_cxt);
}

/* Worker entry point. */
void
pgsentinel_main(Datum main_arg)
{
	TimestampTz next_sample;

	/*
	 * SIGTERM (server shutdown, pg_terminate_backend) ends the sampler at the
	 * top of its loop, quietly, as core's logical replication launcher: exit
	 * code 1, so that the postmaster starts it again after bgw_restart_time
	 * unless the server is shutting down.
	 */
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	/* No database: sampling needs none, and a wrong name cannot stop it. */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("pgsentinel sampler");

	if (pgs_state == NULL)
		ereport(ERROR,
				(errmsg("pgsentinel shared memory is not initialized")));

	sampler_init();
	on_shmem_exit(sampler_exit, (Datum) 0);
	(void) pgs_lock_exclusive();
	pgs_state->sampler.pid = MyProcPid;
	pgs_state->sampler.started = GetCurrentTimestamp();
	pgs_unlock_exclusive();
	publish_settings();

	ereport(LOG,
			(errmsg("pgsentinel sampler started, sampling every %g s into %d rows",
					pgs_sampling_period,
					(int) pgs_state->sampler.ash.capacity)));

	next_sample = GetCurrentTimestamp();
	for (;;)
	{
		TimestampTz now;
		long		timeout_ms;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(1);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			publish_settings();
			pgs_forget_slot_copies();
			/* a new period counts from the last sample */
			next_sample = Min(next_sample,
							  GetCurrentTimestamp() + period_us());
		}

		now = GetCurrentTimestamp();
		if (now >= next_sample)
		{
			take_sample(now);
			pgssh_supervise();
			pgs_archiver_supervise();
			next_sample += period_us();
			if (next_sample <= now)
			{
				/* late by a whole period: do not try to catch up */
				(void) pgs_lock_exclusive();
				pgs_state->sampler.sample_overruns++;
				pgs_unlock_exclusive();
				next_sample = now + period_us();
			}
			continue;
		}

		/* the clock was set back: sample after one period, not after the step */
		if (next_sample - now > period_us())
			next_sample = now + period_us();
		timeout_ms = (long) ((next_sample - now + 999) / 1000);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout_ms, pgs_worker_wait_event());
		ResetLatch(MyLatch);
	}
}
