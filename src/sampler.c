/*-------------------------------------------------------------------------
 *
 * sampler.c
 *		The sampler background worker: every sampling period it reads the
 *		backend-status snapshot and the PGPROC wait information directly
 *		(no SQL), keeps the sessions that are active (and idle in
 *		transaction when asked), looks up blockers of heavyweight-lock
 *		waiters only (blockers.c, once for the whole sample), and appends
 *		the sample to the ASH ring.
 *
 * The backend status is read straight from core's shared array, with the
 * change-counter protocol of backend_status.h, copying texts only for the
 * sessions that will be sampled; an entry whose change counter has not
 * moved since the previous sample is not read again (one load).  Each
 * session's PGPROC number is remembered per status slot (from PostgreSQL
 * 17 it is the slot's own number) and verified by pid at each use; all
 * PGPROCs are looked through only for a session not seen before.
 * Should that array not be found as expected, the sampler falls back on
 * core's snapshot (pgstat_read_current_status), which copies everything.
 *
 * A statement that waits for a lock while it is parsed and analysed has no
 * query id yet.  Its rows are remembered (pid, query_start, ring position)
 * and completed at a later sample, once core has published the query id of
 * that same execution.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "pgsentinel.h"

/*
 * Rows waiting for their statement's query id: room for this many at
 * first, doubled as needed up to the ring's capacity (a row overwritten in
 * the ring is forgotten), so that a long queue of statements waiting for a
 * lock while parsed keeps all its rows.
 */
#define PGS_PENDING_INITIAL		1024

/*
 * What the sampler keeps per backend-status slot between samples (in that
 * slot's SessionCopy; unused when the snapshot is read instead).  The same
 * session (pid, backend start) with the same statement start has the same
 * statement text, and the same session the same client host name: the
 * slot's private copies from an earlier sample are still right and are not
 * read again, and the reference stored for that text is used again without
 * hashing or comparing it.  Copying the text anew drops the reference.  The
 * application name can change at any time (SET application_name): it is
 * compared with the slot's copy, and its reference kept while it is equal.
 * Texts that may change from one sample to the next without the status
 * entry changing -- the nested statement, the blocker list -- are compared
 * with the text their last reference points to (text_like_last).  The
 * first blocker's status slot is a hint, verified by pid before use.
 */
typedef struct ActivityMemo
{
	PgsTextRef	ref;			/* of the copied statement text, or none */
	PgsTextRef	appname_ref;	/* of the copied application name, or none */
	PgsTextRef	blockers_ref;	/* of the last blocker list, or none */
	PgsTextRef	nested_ref;		/* of the last nested statement, or none */
	int			blocker_slot;	/* status slot of the last first blocker */
} ActivityMemo;

/*
 * What the slot's private text copies were made from, and the lengths of
 * the texts its memo references: read only when the status entry has
 * changed (and the lengths in assertions), so kept apart from the copy
 * that every row reads.
 */
typedef struct CopyOrigin
{
	int32		copied_pid;		/* the session the copies describe, 0: none */
	TimestampTz copied_backend_start;
	TimestampTz copied_activity_start;
	uint32		len;			/* of the text memo.ref points to */
	uint32		appname_len;	/* of the text memo.appname_ref points to */
} CopyOrigin;

/*
 * What the sampler copies of one backend-status entry: only the fields a
 * row needs (not the progress counters, not the SSL/GSS pointers), so that
 * reading an entry touches as few of its cache lines as possible.  For a
 * session that is not to be sampled only pid, state, statement start and
 * query id are filled in; for one to be sampled all fields, and its texts
 * in the slot's buffers (session_buffers()).
 *
 * The copy of a status slot is kept from sample to sample, and the entry's
 * st_changecount at the time it was read with it (in the slot's
 * SlotGlance).  Every change of an entry --
 * session start and end, statement, state, query id, application name,
 * progress -- goes through core's change-counter protocol and moves that
 * counter, so while it is even and the same the entry has not changed and
 * the copy is reused: a session in the same state and statement as at the
 * previous sample costs one load.  (Wait events, xid and xmin live in
 * PGPROC, which is read for every sampled row.)
 */
typedef struct SessionCopy
{
	int32		pid;
	BackendState state;
	BackendType backend_type;
	Oid			datid;
	Oid			userid;
	int32		client_port;	/* as AshRow */
	int			status_slot;	/* in core's array; -1 from the snapshot */
	uint8		client_family;
	uint8		client_addr[16];
	bool		sampled;
	bool		has_hostname;	/* its hostname text is not empty */
	TimestampTz proc_start;
	TimestampTz xact_start;
	TimestampTz activity_start;
	TimestampTz state_start;
	uint64		query_id;
	ActivityMemo memo;			/* direct reads only */
} SessionCopy;

/*
 * Every sampled row reads its slot's SessionCopy: the fields above are the
 * ones a row needs, in two cache lines (the array is aligned to a line),
 * both fetched ahead during the pass over the slots.  The texts live in
 * the slot's buffers (session_buffers()), what they were copied from in a
 * CopyOrigin.
 */
StaticAssertDecl(sizeof(SessionCopy) <= 2 * PGS_FETCH_LINE_SIZE,
				 "SessionCopy must fit in the two cache lines fetched ahead");

/*
 * What each sample looks at first for every status slot, kept apart from
 * the copies so that the pass over all slots touches 16 bytes of ours per
 * slot: the entry's change counter when the slot's copy was made (odd: no
 * copy), whether the copy is a session and one to be sampled, and the
 * session's PGPROC number (a hint, verified by pid before use; -1:
 * unknown), so that what its row needs can be fetched ahead.
 */
typedef struct SlotGlance
{
	uint32		changecount;
	int32		procno;
	bool		in_use;
	bool		sampled;
} SlotGlance;


/*
 * pid -> PGPROC and session copy, filled only when a sample needs it.  An
 * entry belongs to the current sample when its generation is the sample's,
 * so the table is never cleared.
 */
typedef struct PidEntry
{
	int32		pid;
	uint32		generation;
	PGPROC	   *proc;
	SessionCopy *be;
} PidEntry;

/* A row whose query id is to be completed later. */
typedef struct PendingBackfill
{
	uint64		row_index;
	int32		pid;
	int32		procno;			/* its PGPROC number, asked for the query id */
	TimestampTz query_start;
	uint32		text_hash;		/* pgs_statement_text_hash() of its text */
} PendingBackfill;

/*
 * What becomes of the pending rows of one statement at this sample: all of
 * them share it, so it is worked out once per statement (decide()) and
 * kept, per PGPROC number, for the statement's other rows.
 */
typedef struct BackfillDecision
{
	uint32		generation;		/* pid_generation of the sample it is of */
	int32		pid;			/* the statement: pid and start */
	TimestampTz query_start;
	bool		fill;			/* complete the rows with queryid, cmdtype */
	bool		keep;			/* and keep them pending */
	uint64		queryid;
	uint8		cmdtype;
} BackfillDecision;

/* The text hash of the last statement remembered, per session copy. */
typedef struct PendingText
{
	int32		pid;
	TimestampTz query_start;
	uint32		hash;
} PendingText;

/* A completion found at this sample, applied under the lock. */
typedef struct Backfill
{
	uint64		row_index;
	int32		pid;
	TimestampTz query_start;
	uint64		queryid;
	uint8		cmdtype;
} Backfill;

/* Sampler state, private to the worker process. */
static MemoryContext sample_cxt = NULL;
static PgsTextBatch *text_batch = NULL;
static PgsBackendSlot *slot_copy = NULL;
static PidEntry *pid_table = NULL;
static uint32 pid_table_mask = 0;
static uint32 pid_generation = 1;	/* entries of this sample's table */
static bool procs_indexed = false;	/* this sample's table has the PGPROCs */
static bool sessions_indexed = false;	/* ... and the sessions */
static int	nsessions = 0;		/* sessions read for this sample */
static int *session_list = NULL;	/* their indexes in sessions[] */
static int	nsampled = 0;		/* those of them to be sampled */
static int *sampled_list = NULL;	/* their indexes in sessions[] */
static PendingBackfill *pending = NULL;
static PgsshKey *pgssh_keys = NULL;
static int	npending = 0;
static int	pending_room = 0;	/* allocated entries of pending[] */
static PendingText *pending_texts = NULL;	/* per session copy */
static BackfillDecision *decisions = NULL;	/* per PGPROC number */
static uint64 ash_written = 0;	/* mirror of pgs_state->ash_written */
static PgBackendStatus *status_array = NULL;	/* core's, NULL: use snapshot */
static int	status_slots = 0;
static SessionCopy *sessions = NULL;	/* one per status slot, line-aligned */
static CopyOrigin *origins = NULL;	/* one per status slot */
static SlotGlance *glances = NULL;	/* one per status slot */
static char *session_strings = NULL;	/* their texts */
static Size session_strings_size = 0;	/* per session */
static int64 last_sample_id = 0;	/* mirror of pgs_state->last_sample_id */
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
	pgs_state->worker_period = pgs_sampling_period;
	pgs_state->worker_track_idle_trans = pgs_track_idle_trans;
	LWLockRelease(pgs_state->lock);
}

/* Clear worker_pid when the worker exits. */
static void
sampler_exit(int code, Datum arg)
{
	if (pgs_state == NULL)
		return;
	(void) pgs_lock_exclusive();
	if (pgs_state->worker_pid == MyProcPid)
		pgs_state->worker_pid = 0;
	LWLockRelease(pgs_state->lock);
}

/* Is a session in this state recorded? (never the sampler itself) */
static inline bool
state_sampled(BackendState st)
{
	return st == STATE_RUNNING || st == STATE_FASTPATH ||
		(pgs_track_idle_trans &&
		 (st == STATE_IDLEINTRANSACTION || st == STATE_IDLEINTRANSACTION_ABORTED));
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

/* Find (or, with insert, create) this sample's pid table entry of pid. */
static PidEntry *
pid_lookup(int32 pid, bool insert)
{
	uint32		i = ((uint32) pid * 2654435761U) & pid_table_mask;

	for (;;)
	{
		PidEntry   *e = &pid_table[i];

		if (e->generation != pid_generation)
		{
			if (!insert)
				return NULL;
			e->generation = pid_generation;
			e->pid = pid;
			e->proc = NULL;
			e->be = NULL;
			return e;
		}
		if (e->pid == pid)
			return e;
		i = (i + 1) & pid_table_mask;
	}
}

/* Start an empty pid table (and backfill decisions) for a new sample. */
static void
pid_table_reset(void)
{
	if (++pid_generation == 0)
	{
		/* wrapped: generation 0 must not match any entry */
		memset(pid_table, 0, sizeof(PidEntry) * (pid_table_mask + 1));
		memset(decisions, 0, sizeof(BackfillDecision) * Max(pgs_state->nslots, 1));
		pid_generation = 1;
	}
	procs_indexed = false;
	sessions_indexed = false;
}

/* Index every PGPROC in use by pid, once per sample at most. */
static void
index_procs(void)
{
	uint32		i;

	if (procs_indexed)
		return;
	for (i = 0; i < ProcGlobal->allProcCount; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];
		int32		pid = proc->pid;

		if (pid > 0)
			pid_lookup(pid, true)->proc = proc;
	}
	procs_indexed = true;
}

/* The session of pid read for this sample, or NULL. */
static SessionCopy *
session_by_pid(int32 pid)
{
	PidEntry   *e;

	if (!sessions_indexed)
	{
		int			i;

		for (i = 0; i < nsessions; i++)
		{
			SessionCopy *be = &sessions[session_list[i]];

			pid_lookup(be->pid, true)->be = be;
		}
		sessions_indexed = true;
	}
	e = pid_lookup(pid, false);
	return e ? e->be : NULL;
}

/*
 * The PGPROC of a session, or NULL if it has none any more.  Each status
 * slot remembers the PGPROC number of its session, verified by pid at every
 * use: a session keeps its PGPROC for life, so the PGPROCs are looked
 * through (once per sample) only when a slot's session is new.  PostgreSQL
 * 17 and later give a session the status slot of its PGPROC's number.
 */
static PGPROC *
session_proc(const SessionCopy *s)
{
	SlotGlance *g = s->status_slot >= 0 ? &glances[s->status_slot] : NULL;
	PGPROC	   *proc;
	PidEntry   *e;

	if (g != NULL && g->procno >= 0)
	{
		proc = &ProcGlobal->allProcs[g->procno];
		if (*((volatile int *) &proc->pid) == s->pid)
			return proc;
	}
	index_procs();
	e = pid_lookup(s->pid, false);
	proc = e ? e->proc : NULL;
	if (g != NULL)
		g->procno = proc ? pgs_proc_number(proc) :
			pgs_status_slot_procno(s->status_slot);
	return proc;
}

/*
 * Start fetching what the row of the session in status slot i will read,
 * so that these cache misses overlap with the rest of the pass over the
 * slots instead of being paid one after the other in fill_row(): its
 * PGPROC (xid and xmin, pid, wait event), its backend slot, and our copy.
 */
static inline void
prefetch_row_sources(int i, int procno)
{
	if (procno >= 0)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[procno];

		pgs_prefetch(&proc->xid);
		pgs_prefetch(&proc->pid);
		pgs_prefetch(&proc->wait_event_info);
		pgs_prefetch(pgs_backend_slot(procno));
	}
	pgs_prefetch(&sessions[i]);
	pgs_prefetch((char *) &sessions[i] + PGS_FETCH_LINE_SIZE);
}

/*
 * Copy a NUL-terminated string of at most size - 1 bytes (core's buffers
 * always hold a terminator), with libc's fast primitives: core's strlcpy
 * copies byte by byte, and was a quarter of the sampler's time.
 */
static inline void
copy_cstring(char *dst, const char *src, Size size)
{
	Size		len = strnlen(src, size - 1);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* The private text buffers of the session copy sessions[n]. */
static void
session_buffers(int n, char **appname, char **hostname, char **activity)
{
	char	   *base = session_strings + (Size) n * session_strings_size;

	*appname = base;
	*hostname = base + NAMEDATALEN;
	*activity = base + 2 * NAMEDATALEN;
}

/* Client address and port, as pg_stat_activity derives them. */
static void
copy_client(SessionCopy *dst, const SockAddr *addr)
{
	const struct sockaddr_storage *ss = &addr->addr;

	dst->client_family = 0;
	dst->client_port = 0;
	if (ss->ss_family == AF_INET)
	{
		const struct sockaddr_in *sin = (const struct sockaddr_in *) ss;

		dst->client_family = AF_INET;
		memset(dst->client_addr, 0, sizeof(dst->client_addr));
		memcpy(dst->client_addr, &sin->sin_addr, 4);
		dst->client_port = ntohs(sin->sin_port);
	}
	else if (ss->ss_family == AF_INET6)
	{
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) ss;

		dst->client_family = AF_INET6;
		memcpy(dst->client_addr, &sin6->sin6_addr, 16);
		dst->client_port = ntohs(sin6->sin6_port);
	}
	else if (ss->ss_family == AF_UNIX)
		dst->client_port = -1;
}

/* What a sampled row needs of a backend-status entry, but its strings. */
static inline void
copy_session_fields(SessionCopy *dst, const PgBackendStatus *src)
{
	dst->backend_type = src->st_backendType;
	dst->datid = src->st_databaseid;
	dst->userid = src->st_userid;
	dst->proc_start = src->st_proc_start_timestamp;
	dst->xact_start = src->st_xact_start_timestamp;
	dst->state_start = src->st_state_start_timestamp;
	copy_client(dst, &src->st_clientaddr);
}

/*
 * Read core's backend-status array directly into the copies kept per slot
 * (sessions[]): entries that changed since the previous sample are read
 * again, with their row fields and texts when the session is to be
 * sampled, pid, state, statement start and query id otherwise.  Texts are
 * copied only when they may have changed (see ActivityMemo).  Lists the
 * slots in use in session_list and returns their number, and those to be
 * sampled in sampled_list.
 */
static int
read_sessions_direct(void)
{
	int			n = 0;
	int			i;

	for (i = 0; i < status_slots; i++)
	{
		volatile PgBackendStatus *src = &status_array[i];
		SlotGlance *g = &glances[i];
		SessionCopy *dst;
		uint32		changecount;
		char	   *appname;
		char	   *hostname;
		char	   *activity;
		int			pid;
		ActivityMemo *memo;
		CopyOrigin *origin;

		/* set once an attempt overwrote the copies, even a torn one */
		bool		recopy_appname = false;
		bool		recopy_hostname = false;
		bool		recopy_activity = false;

		/*
		 * Unchanged since it was copied: the copy is still right (settings
		 * that decide which sessions are sampled drop every copy when they
		 * change: forget_slot_copies).
		 */
		changecount = src->st_changecount;
		if (changecount == g->changecount && (changecount & 1) == 0)
		{
			if (g->in_use)
			{
				session_list[n++] = i;
				if (g->sampled)
				{
					sampled_list[nsampled++] = i;
					prefetch_row_sources(i, g->procno);
				}
			}
			continue;
		}
		dst = &sessions[i];
		memo = &dst->memo;
		origin = &origins[i];

		/* by slot: a slot's copies of an earlier sample may still be right */
		session_buffers(i, &appname, &hostname, &activity);
		for (;;)
		{
			int			before;
			int			after;

			pgstat_begin_read_activity(src, before);
			pid = src->st_procpid;
			dst->pid = pid;
			dst->sampled = false;
			if (pid > 0)
			{
				BackendState st = src->st_state;

				/* what blockers and backfills need of any session */
				dst->state = st;
				dst->activity_start = src->st_activity_start_timestamp;
				dst->query_id = (uint64) src->st_query_id;
				if (pid != MyProcPid && state_sampled(st))
				{
					copy_session_fields(dst, (const PgBackendStatus *) src);
					recopy_hostname |= origin->copied_pid != pid ||
						origin->copied_backend_start != dst->proc_start;
					recopy_appname |= recopy_hostname ||
						strncmp(appname, src->st_appname, NAMEDATALEN) != 0;
					if (recopy_appname)
						copy_cstring(appname, src->st_appname, NAMEDATALEN);
					if (recopy_hostname)
						copy_cstring(hostname, src->st_clienthostname, NAMEDATALEN);
					dst->has_hostname = hostname[0] != '\0';
					recopy_activity |= recopy_hostname ||
						origin->copied_activity_start != dst->activity_start;
					if (recopy_activity)
						copy_cstring(activity, src->st_activity_raw,
									 pgstat_track_activity_query_size);
					dst->sampled = true;
				}
			}
			pgstat_end_read_activity(src, after);
			if (pgstat_read_activity_complete(before, after))
			{
				g->changecount = (uint32) before;
				break;
			}
			CHECK_FOR_INTERRUPTS();
		}
		if (recopy_hostname || recopy_activity)
		{
			/* the copies describe the session read last, if it is sampled */
			origin->copied_pid = dst->sampled ? pid : 0;
			origin->copied_backend_start = dst->proc_start;
			origin->copied_activity_start = dst->activity_start;
			memo->ref = PGS_TEXT_NONE;
		}
		if (recopy_appname)
			memo->appname_ref = PGS_TEXT_NONE;
		dst->status_slot = i;
		g->in_use = pid > 0;
		g->sampled = dst->sampled;
		if (pid > 0)
			session_list[n++] = i;
		if (g->sampled)
		{
			sampled_list[nsampled++] = i;
			prefetch_row_sources(i, g->procno);
		}
	}
	return n;
}

/* The same from core's snapshot, when the array cannot be read directly. */
static int
read_sessions_snapshot(void)
{
	int			nbackends;
	int			n = 0;
	int			i;

	pgstat_clear_backend_activity_snapshot();
	nbackends = pgstat_fetch_stat_numbackends();
	for (i = 1; i <= nbackends && n < status_slots; i++)
	{
		LocalPgBackendStatus *local = pgs_local_beentry(i);
		const PgBackendStatus *be;
		SessionCopy *dst = &sessions[n];
		char	   *appname;
		char	   *hostname;
		char	   *activity;

		if (local == NULL || local->backendStatus.st_procpid <= 0)
			continue;
		be = &local->backendStatus;
		session_buffers(n, &appname, &hostname, &activity);
		dst->pid = be->st_procpid;
		dst->state = be->st_state;
		dst->activity_start = be->st_activity_start_timestamp;
		dst->query_id = (uint64) be->st_query_id;
		copy_session_fields(dst, be);
		dst->sampled = dst->pid != MyProcPid && state_sampled(dst->state);
		copy_cstring(appname, be->st_appname, NAMEDATALEN);
		copy_cstring(hostname, be->st_clienthostname, NAMEDATALEN);
		dst->has_hostname = hostname[0] != '\0';
		copy_cstring(activity, be->st_activity_raw,
					 pgstat_track_activity_query_size);
		dst->status_slot = -1;
		session_list[n] = n;
		if (dst->sampled)
			sampled_list[nsampled++] = n;
		n++;
	}
	pgstat_clear_backend_activity_snapshot();
	return n;
}

/*
 * Core's backend-status array, looked up by its name and expected size, or
 * NULL (then the snapshot is used) if it is not there as expected.
 */
static PgBackendStatus *
find_status_array(void)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	PgBackendStatus *array = NULL;

	PG_TRY();
	{
		bool		found;
		PgBackendStatus *p;

		p = ShmemInitStruct("Backend Status Array",
							mul_size(sizeof(PgBackendStatus), status_slots),
							&found);
		if (found)
			array = p;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		FlushErrorState();
	}
	PG_END_TRY();
	if (array == NULL)
		ereport(LOG,
				(errmsg("pgsentinel sampler reads the backend status through core's snapshot")));
	return array;
}

/*
 * Make the next sample read every backend-status entry again: which
 * sessions are sampled depends on settings (track_idle_trans), and a copy
 * made for a session that was not to be sampled lacks a row's fields.
 */
static void
forget_slot_copies(void)
{
	int			i;

	for (i = 0; i < status_slots; i++)
		glances[i].changecount = 1; /* odd: no copy */
}

/* One-time setup of the sampler's private memory. */
static void
sampler_init(void)
{
	uint32		size = 1024;
	int			i;

	/*
	 * Every sample allocates and frees the same few hundred kilobytes (the
	 * backend-status snapshot, the rows).  Keep freed memory in the process
	 * instead of giving it back to the kernel and faulting it in again at
	 * the next sample: that churn was most of the sampler's time.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);

	sample_cxt = AllocSetContextCreate(TopMemoryContext, "pgsentinel sample",
									   ALLOCSET_DEFAULT_SIZES);
	text_batch = pgs_text_batch_create(TopMemoryContext);
	slot_copy = MemoryContextAlloc(TopMemoryContext, pgs_state->slot_size);
	while (size < 2 * (ProcGlobal->allProcCount + MaxBackends + NUM_AUXILIARY_PROCS))
		size *= 2;
	pid_table = MemoryContextAllocZero(TopMemoryContext, sizeof(PidEntry) * size);
	pid_table_mask = size - 1;
	decisions = MemoryContextAllocZero(TopMemoryContext,
									   sizeof(BackfillDecision) * Max(pgs_state->nslots, 1));
	pending_room = Min(PGS_PENDING_INITIAL, pgs_state->ash_capacity);
	pending = MemoryContextAlloc(TopMemoryContext,
								 sizeof(PendingBackfill) * pending_room);
	pgssh_keys = MemoryContextAlloc(TopMemoryContext,
									sizeof(PgsshKey) * pgs_state->request_max_keys);

	status_slots = pgs_backend_status_slots();
	sessions = (SessionCopy *)
		TYPEALIGN(PGS_FETCH_LINE_SIZE,
				  MemoryContextAllocZero(TopMemoryContext,
										 sizeof(SessionCopy) * status_slots +
										 PGS_FETCH_LINE_SIZE));
	origins = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(CopyOrigin) * status_slots);
	session_list = MemoryContextAlloc(TopMemoryContext, sizeof(int) * status_slots);
	pending_texts = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(PendingText) * status_slots);
	sampled_list = MemoryContextAlloc(TopMemoryContext, sizeof(int) * status_slots);
	glances = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(SlotGlance) * status_slots);
	for (i = 0; i < status_slots; i++)
	{
		glances[i].procno = pgs_status_slot_procno(i);
		sessions[i].memo.blocker_slot = -1;
	}
	forget_slot_copies();
	session_strings_size = MAXALIGN(2 * NAMEDATALEN + pgstat_track_activity_query_size);
	session_strings = MemoryContextAllocHuge(TopMemoryContext,
											 session_strings_size * status_slots);
	status_array = find_status_array();
	pgs_prefault(pgs_ash_rows(), sizeof(AshRow) * (Size) pgs_state->ash_capacity);
	pgs_prefault(pgs_text_area(), pgs_state->text_size);
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
	ash_written = pgs_ring_written(&pgs_state->ash);
	last_sample_id = pgs_state->last_sample_id;
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
 * The session of a blocker pid: usually the one that was the first blocker
 * of this waiter at the previous sample (a lock queue changes slowly), else
 * found by pid.
 */
static SessionCopy *
blocker_session(ActivityMemo *memo, int32 pid)
{
	SessionCopy *s;

	/* pid 0: a prepared transaction, which has no session */
	if (pid > 0 && memo != NULL && memo->blocker_slot >= 0 &&
		sessions[memo->blocker_slot].pid == pid)
		return &sessions[memo->blocker_slot];
	s = session_by_pid(pid);
	if (memo != NULL)
		memo->blocker_slot = s ? s->status_slot : -1;
	return s;
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
	ActivityMemo *memo = waiter->status_slot >= 0 ?
		&sessions[waiter->status_slot].memo : NULL;
	SessionCopy *blocker;
	uint32		len = list_len * sizeof(int32);

	row->blockers = w->nblockers;
	if (w->nblockers == 0)
	{
		row->wait_event_info = *((volatile uint32 *) &w->proc->wait_event_info);
		return;
	}
	row->blockerpid = pids[0];
	blocker = blocker_session(memo, pids[0]);
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

/* Build the row of one session to be sampled. */
static void
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

	proc = session_proc(local);
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
	session_buffers(local - sessions, &appname, &hostname, &activity);
	if (local->has_hostname)
		row->client_hostname = add_text(hostname, row_index);
	if (local->backend_type == B_BG_WORKER)
		row->backend_type_name = add_text(GetBackgroundWorkerTypeByPid(row->pid),
										  row_index);
	if (local->status_slot >= 0)
	{
		/* texts stored once per statement, and per application name */
		CopyOrigin *origin = &origins[local->status_slot];

		memo = &sessions[local->status_slot].memo;
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

	/* blockers are looked up for the whole sample at once */
	if ((row->wait_event_info & 0xFF000000) == PG_WAIT_LOCK && proc != NULL)
	{
		PgsLockWaiter *w = &lock_waiters[nlock_waiters];

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
}

/*
 * Is there room for one more pending row?  Doubles pending[] when full, up
 * to the ring's capacity; without the memory, the row is not remembered.
 */
static bool
room_for_pending(void)
{
	int			room;
	PendingBackfill *bigger;

	if (npending < pending_room)
		return true;
	if (pending_room >= pgs_state->ash_capacity)
		return false;
	room = (int) Min((int64) pending_room * 2, (int64) pgs_state->ash_capacity);
	bigger = MemoryContextAllocExtended(TopMemoryContext,
										sizeof(PendingBackfill) * (Size) room,
										MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (bigger == NULL)
		return false;
	memcpy(bigger, pending, sizeof(PendingBackfill) * npending);
	pfree(pending);
	pending = bigger;
	pending_room = room;
	return true;
}

/*
 * Remember a row whose statement has no query id yet (it is being parsed:
 * waiting for a lock, most of the time), and ask its backend for the query
 * id: it answers at its next statement, and the answer outlives the
 * statement (see PgsBackendSlot).
 */
static void
remember_pending(const AshRow *row, const SessionCopy *local,
				 uint64 row_index)
{
	PendingBackfill *p = &pending[npending];
	PGPROC	   *proc = session_proc(local);
	int			n = local - sessions;
	PendingText *text = &pending_texts[n];

	if (proc == NULL)
		return;
	/* a statement waits many samples: its text is hashed once */
	if (text->pid != row->pid || text->query_start != row->query_start)
	{
		char	   *appname;
		char	   *hostname;
		char	   *activity;

		session_buffers(n, &appname, &hostname, &activity);
		text->pid = row->pid;
		text->query_start = row->query_start;
		text->hash = pgs_statement_text_hash(activity);
	}
	p->row_index = row_index;
	p->pid = row->pid;
	p->procno = pgs_proc_number(proc);
	p->query_start = row->query_start;
	p->text_hash = text->hash;
	npending++;
	pgs_request_query_id(p->procno, p->query_start);
}

/* What a backend answered about a pending row's statement. */
typedef enum BackendAnswer
{
	ANSWER_NONE,				/* nothing (yet), or about another statement */
	ANSWER_CANNOT_TELL,			/* one of several statements of a string */
	ANSWER_FOUND				/* its query id and command type */
} BackendAnswer;

static BackendAnswer
backend_answer(const PendingBackfill *p, PgsQueryIdAnswer *answer)
{
	if (!pgs_read_query_id_answer(p->procno, p->pid, answer) ||
		answer->request != p->query_start)
		return ANSWER_NONE;
	/* pg_stat_activity cannot tell the statements of a string apart either */
	if (answer->queryid == 0)
		return ANSWER_CANNOT_TELL;
	/* the same statement: same start, or same whole text (Parse/Execute) */
	if (answer->same_start ||
		(answer->text_whole && answer->text_hash == p->text_hash))
		return ANSWER_FOUND;
	return ANSWER_NONE;
}


/* Work out what becomes of the rows of pending row p's statement. */
static void
decide(const PendingBackfill *p, BackfillDecision *d)
{
	SessionCopy *be;
	PGPROC	   *proc;
	bool		running;
	PgsQueryIdAnswer answer;

	d->fill = false;
	d->keep = false;
	/* the backend answered: its statement may have ended since */
	switch (backend_answer(p, &answer))
	{
		case ANSWER_CANNOT_TELL:
			return;
		case ANSWER_FOUND:
			d->fill = true;
			d->queryid = answer.queryid;
			d->cmdtype = answer.cmdtype;
			return;
		case ANSWER_NONE:
			break;
	}
	be = session_by_pid(p->pid);
	if (be == NULL)
		return;					/* gone: cannot be known any more */
	running = be->state == STATE_RUNNING || be->state == STATE_FASTPATH;
	if (be->activity_start != p->query_start)
	{
		/*
		 * A newer statement start; with the extended query protocol, the
		 * Bind or Execute of the statement asked about, which answers when
		 * it is executed.  Otherwise it cannot be known.
		 */
		d->keep = running &&
			pgs_query_id_requested(p->procno, p->pid, p->query_start);
		return;
	}
	if (be->query_id == 0)
	{
		/*
		 * Still being analysed; or it ended without a query id (an error, a
		 * cancel, compute_query_id off): it never will have one, and must
		 * not hold a place while the session idles.
		 */
		d->keep = running;
		return;
	}
	d->fill = true;
	d->queryid = be->query_id;
	d->cmdtype = PGS_CMD_UNKNOWN;
	proc = session_proc(be);
	if (proc &&
		pgs_read_backend_slot(pgs_proc_number(proc), p->pid, slot_copy))
	{
		if (slot_copy->top_queryid == d->queryid)
			d->cmdtype = slot_copy->top_cmdtype;
		else if (slot_copy->nested && slot_copy->exec_queryid == d->queryid)
			d->cmdtype = slot_copy->exec_cmdtype;
	}
	/* analysed but not executing yet: the command type comes later */
	d->keep = d->cmdtype == PGS_CMD_UNKNOWN && running;
}

/*
 * Rows of earlier samples whose query id was not known yet: find the ones
 * this snapshot completes, drop the ones that can no longer be completed.
 */
static int
find_backfills(Backfill *out)
{
	int			nout = 0;
	int			i;
	int			keep = 0;
	uint64		oldest_row = ash_written > (uint64) pgs_state->ash_capacity ?
		ash_written - pgs_state->ash_capacity : 0;

	for (i = 0; i < npending; i++)
	{
		PendingBackfill *p = &pending[i];
		BackfillDecision one;
		BackfillDecision *d = &one;

		if (p->row_index < oldest_row)
			continue;
		if (p->procno >= 0 && p->procno < pgs_state->nslots)
			d = &decisions[p->procno];
		if (d == &one || d->generation != pid_generation ||
			d->pid != p->pid || d->query_start != p->query_start)
		{
			decide(p, d);
			d->generation = pid_generation;
			d->pid = p->pid;
			d->query_start = p->query_start;
		}
		if (d->fill)
		{
			out[nout].row_index = p->row_index;
			out[nout].pid = p->pid;
			out[nout].query_start = p->query_start;
			out[nout].queryid = d->queryid;
			out[nout].cmdtype = d->cmdtype;
			nout++;
		}
		if (d->keep)
			pending[keep++] = *p;
	}
	npending = keep;
	return nout;
}

/*
 * Copy the prepared sample into the ring: the only place the sampler holds
 * the lock exclusively.  Copies and stores only.
 */
static void
publish_sample(const AshRow *rows, int nrows, const Backfill *fills,
			   int nfills, int nkeys, int via_core, int64 sample_id,
			   TimestampTz now, TimestampTz started)
{
	uint64		capacity = (uint64) pgs_state->ash_capacity;
	uint64		oldest_row;
	int			i;
	int64		sample_us = GetCurrentTimestamp() - started;
	int64		lock_wait_us;

	lock_wait_us = pgs_lock_exclusive();

	pgs_text_batch_publish(text_batch);

	/*
	 * pgsentinel_reset() ran while this sample was prepared: it may use
	 * texts readers no longer show, and it was taken before the reset, so
	 * it is hidden with the rows before it (and its statements rows).
	 */
	if (pgs_text_batch_reset_missed(text_batch))
	{
		pg_atomic_write_u64(&pgs_state->reset_sample_id, (uint64) sample_id);
		pgs_ring_hide_before(&pgs_state->ash, ash_written + nrows);
	}

	pgs_ring_append(&pgs_state->ash, rows, (uint64) nrows);
	ash_written += nrows;
	pgs_state->last_sample_id = sample_id;

	oldest_row = ash_written > capacity ? ash_written - capacity : 0;
	for (i = 0; i < nfills; i++)
	{
		const Backfill *f = &fills[i];
		AshRow	   *r;

		if (f->row_index < oldest_row)
			continue;
		r = pgs_ring_begin_update(&pgs_state->ash, f->row_index);
		if (r->pid == f->pid && r->query_start == f->query_start)
		{
			if (r->queryid == 0)
			{
				r->queryid = f->queryid;
				if (r->nested_queryid == 0)
					r->nested_queryid = f->queryid;
				pgs_state->rows_backfilled++;
			}
			if (r->cmdtype == PGS_CMD_UNKNOWN && r->queryid == f->queryid)
				r->cmdtype = f->cmdtype;
		}
		pgs_ring_end_update(&pgs_state->ash, f->row_index);
	}

	pgssh_publish_request_locked(pgssh_keys, nkeys, sample_id, now);

	pgs_state->blockers_via_core += via_core;
	pgs_state->samples_taken++;
	pgs_state->last_sample_time = now;
	pgs_state->last_sample_us = sample_us;
	if (sample_us > pgs_state->max_sample_us)
		pgs_state->max_sample_us = sample_us;
	if (lock_wait_us > pgs_state->max_lock_wait_us)
		pgs_state->max_lock_wait_us = lock_wait_us;
	LWLockRelease(pgs_state->lock);
}

/* Take one sample stamped now. */
static void
take_sample(TimestampTz now)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(sample_cxt);
	TimestampTz started = GetCurrentTimestamp();
	AshRow	   *rows;
	Backfill   *fills;
	int			nrows = 0;
	int			nfills;
	int			nkeys;
	int			via_core;
	bool		query_ids_on;
	int64		sample_id = last_sample_id + 1;
	StoredBlockerList stored_list = {NULL, 0, PGS_TEXT_NONE};
	int			i;

	nsampled = 0;
	nsessions = status_array ? read_sessions_direct() : read_sessions_snapshot();
	pid_table_reset();

	rows = sample_rows;
	fills = palloc_extended(sizeof(Backfill) * (Size) Max(npending, 1),
							MCXT_ALLOC_HUGE);
	pgs_text_batch_reset(text_batch);

	nfills = find_backfills(fills);

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

		fill_row(row, &sessions[sampled_list[i]], row_index, sample_id, now);
		nrows++;

		/* remember rows whose statement has no query id yet */
		if (row->queryid == 0 && row->query_start != 0 &&
			row->backend_type == B_BACKEND && query_ids_on &&
			room_for_pending())
			remember_pending(row, &sessions[sampled_list[i]], row_index);
	}

	via_core = pgs_find_blockers(lock_waiters, nlock_waiters, waiter_order);
	for (i = 0; i < nlock_waiters; i++)
	{
		PgsLockWaiter *w = &lock_waiters[waiter_order[i]];

		fill_blockers(&rows[w->row], w, waiter_sessions[waiter_order[i]],
					  ash_written + w->row, &stored_list);
	}

	nkeys = pgssh_collect_keys(rows, nrows, pgssh_keys);
	publish_sample(rows, nrows, fills, nfills, nkeys, via_core, sample_id,
				   now, started);
	last_sample_id = sample_id;
	if (nkeys > 0)
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
	pgs_state->worker_pid = MyProcPid;
	pgs_state->worker_started = GetCurrentTimestamp();
	LWLockRelease(pgs_state->lock);
	publish_settings();

	ereport(LOG,
			(errmsg("pgsentinel sampler started, sampling every %g s into %d rows",
					pgs_sampling_period, pgs_state->ash_capacity)));

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
			forget_slot_copies();
			/* a new period counts from the last sample */
			next_sample = Min(next_sample,
							  GetCurrentTimestamp() + period_us());
		}

		now = GetCurrentTimestamp();
		if (now >= next_sample)
		{
			take_sample(now);
			pgssh_supervise();
			next_sample += period_us();
			if (next_sample <= now)
			{
				/* late by a whole period: do not try to catch up */
				(void) pgs_lock_exclusive();
				pgs_state->sample_overruns++;
				LWLockRelease(pgs_state->lock);
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
