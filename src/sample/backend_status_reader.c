/*-------------------------------------------------------------------------
 *
 * backend_status_reader.c
 *		The sampler's reading of what every session publishes: core's
 *		backend-status array, copied per status slot (SessionCopy) with the
 *		change-counter protocol of backend_status.h, and pgsentinel's own
 *		backend slots (written by hooks.c).  Nothing here takes a lock.
 *
 * An entry whose change counter has not moved since the previous sample is
 * not read again (one load), and texts are copied only for the sessions
 * that will be sampled.  Each session's PGPROC number is remembered per
 * status slot (from PostgreSQL 17 it is the slot's own number) and verified
 * by pid at each use; all PGPROCs are looked through only for a session not
 * seen before.  Should the array not be found as expected, core's snapshot
 * (pgstat_read_current_status) is read instead, which copies everything.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"

#include "compat.h"
#include "guc.h"
#include "pgsentinel.h"
#include "sample/backend_slot.h"
#include "sample/sessions.h"
#include "store/text_area.h"

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

/* Reader state, private to the sampler process. */
static PidEntry *pid_table = NULL;
static uint32 pid_table_mask = 0;
static uint32 pid_generation = 1;	/* entries of this sample's table */
static bool procs_indexed = false;	/* this sample's table has the PGPROCs */
static bool sessions_indexed = false;	/* ... and the sessions */
static int	nsessions = 0;		/* sessions read for this sample */
static int *session_list = NULL;	/* their indexes in sessions[] */
static int	nsampled = 0;		/* those of them to be sampled */
static int *sampled_list = NULL;	/* their indexes in sessions[] */
static PgBackendStatus *status_array = NULL;	/* core's, NULL: use snapshot */
static int	status_slots = 0;
static SessionCopy *sessions = NULL;	/* one per status slot, line-aligned */
static CopyOrigin *origins = NULL;	/* one per status slot */
static SlotGlance *glances = NULL;	/* one per status slot */
static char *session_strings = NULL;	/* their texts */
static Size session_strings_size = 0;	/* per session */

/* Is a session in this state recorded? (never the sampler itself) */
static inline bool
state_sampled(BackendState st)
{
	return st == STATE_RUNNING || st == STATE_FASTPATH ||
		(pgs_track_idle_trans &&
		 (st == STATE_IDLEINTRANSACTION || st == STATE_IDLEINTRANSACTION_ABORTED));
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

/* Start an empty pid table for a new sample. */
static void
pid_table_reset(void)
{
	if (++pid_generation == 0)
	{
		/* wrapped: generation 0 must not match any entry */
		memset(pid_table, 0, sizeof(PidEntry) * (pid_table_mask + 1));
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
SessionCopy *
pgs_session_by_pid(int32 pid)
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
PGPROC *
pgs_session_proc(const SessionCopy *s)
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
 * slots instead of being paid one after the other in sampler.c's
 * fill_row(): its
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
 * copies byte by byte.
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

/* Which of a slot's private texts a read has copied anew. */
typedef struct TextRecopy
{
	bool		appname;
	bool		hostname;
	bool		activity;
} TextRecopy;

/*
 * Copy what a row needs of the entry src of session pid, being read (its
 * change counter taken), into dst and the slot's text buffers: its fields,
 * and each text only if it may have changed since origin's copy (an
 * attempt that overwrote a buffer sets its flag, which the attempts of one
 * read accumulate: a torn attempt may have overwritten it).
 */
static inline void
copy_sampled_session(SessionCopy *dst, volatile PgBackendStatus *src,
					 const CopyOrigin *origin, int pid, char *appname,
					 char *hostname, char *activity, TextRecopy *recopy)
{
	copy_session_fields(dst, (const PgBackendStatus *) src);
	recopy->hostname |= origin->copied_pid != pid ||
		origin->copied_backend_start != dst->proc_start;
	recopy->appname |= recopy->hostname ||
		strncmp(appname, src->st_appname, NAMEDATALEN) != 0;
	if (recopy->appname)
		copy_cstring(appname, src->st_appname, NAMEDATALEN);
	if (recopy->hostname)
		copy_cstring(hostname, src->st_clienthostname, NAMEDATALEN);
	dst->has_hostname = hostname[0] != '\0';
	recopy->activity |= recopy->hostname ||
		origin->copied_activity_start != dst->activity_start;
	if (recopy->activity)
		copy_cstring(activity, src->st_activity_raw,
					 pgstat_track_activity_query_size);
}

/*
 * After a read: what the slot's texts were copied from (copied_pid 0 if
 * they describe no session to be sampled), and the memo's references of
 * texts copied anew dropped.
 */
static inline void
note_recopy(SessionCopy *dst, CopyOrigin *origin, const TextRecopy *recopy,
			int32 copied_pid)
{
	if (recopy->hostname || recopy->activity)
	{
		origin->copied_pid = copied_pid;
		origin->copied_backend_start = dst->proc_start;
		origin->copied_activity_start = dst->activity_start;
		dst->memo.ref = PGS_TEXT_NONE;
	}
	if (recopy->appname)
		dst->memo.appname_ref = PGS_TEXT_NONE;
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
		CopyOrigin *origin;
		TextRecopy	recopy = {false, false, false};

		/*
		 * Unchanged since it was copied: the copy is still right (settings
		 * that decide which sessions are sampled drop every copy when they
		 * change: pgs_forget_slot_copies).
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
					copy_sampled_session(dst, src, origin, pid, appname,
										 hostname, activity, &recopy);
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
		/* the copies describe the session read last, if it is sampled */
		note_recopy(dst, origin, &recopy, dst->sampled ? pid : 0);
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

/*
 * Complete the copy of a session read as one not to be sampled (its pid,
 * state, statement start and query id only) with all that a row needs, as
 * read_sessions_direct() reads a sampled one: for a session sampled because
 * it blocks a sampled one (sampler.c).  Its texts are copied again only if
 * they may have changed since they were last copied.  False if its status
 * slot holds another session by now, or the session has become one to be
 * sampled (active again: the next sample has its row, with its own wait
 * and blockers).  A copy from core's snapshot is complete already.
 */
bool
pgs_complete_session(SessionCopy *s)
{
	volatile PgBackendStatus *src;
	CopyOrigin *origin;
	char	   *appname;
	char	   *hostname;
	char	   *activity;
	TextRecopy	recopy = {false, false, false};
	int			pid;

	if (s->status_slot < 0)
		return true;
	src = &status_array[s->status_slot];
	origin = &origins[s->status_slot];
	session_buffers(s->status_slot, &appname, &hostname, &activity);
	for (;;)
	{
		int			before;
		int			after;

		pgstat_begin_read_activity(src, before);
		pid = src->st_procpid;
		if (pid == s->pid)
		{
			s->state = src->st_state;
			s->activity_start = src->st_activity_start_timestamp;
			s->query_id = (uint64) src->st_query_id;
			copy_sampled_session(s, src, origin, pid, appname, hostname,
								 activity, &recopy);
		}
		pgstat_end_read_activity(src, after);
		if (pgstat_read_activity_complete(before, after))
			break;
		CHECK_FOR_INTERRUPTS();
	}
	note_recopy(s, origin, &recopy, pid == s->pid ? pid : 0);
	return pid == s->pid && !state_sampled(s->state);
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
void
pgs_forget_slot_copies(void)
{
	int			i;

	for (i = 0; i < status_slots; i++)
		glances[i].changecount = 1; /* odd: no copy */
}

/* One-time setup of the reader's private memory, in the sampler. */
void
pgs_status_reader_init(void)
{
	uint32		size = 1024;
	int			i;

	while (size < 2 * (ProcGlobal->allProcCount + MaxBackends + NUM_AUXILIARY_PROCS))
		size *= 2;
	pid_table = MemoryContextAllocZero(TopMemoryContext, sizeof(PidEntry) * size);
	pid_table_mask = size - 1;

	status_slots = pgs_backend_status_slots();
	sessions = (SessionCopy *)
		TYPEALIGN(PGS_FETCH_LINE_SIZE,
				  MemoryContextAllocZero(TopMemoryContext,
										 sizeof(SessionCopy) * status_slots +
										 PGS_FETCH_LINE_SIZE));
	origins = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(CopyOrigin) * status_slots);
	session_list = MemoryContextAlloc(TopMemoryContext, sizeof(int) * status_slots);
	sampled_list = MemoryContextAlloc(TopMemoryContext, sizeof(int) * status_slots);
	glances = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(SlotGlance) * status_slots);
	for (i = 0; i < status_slots; i++)
	{
		glances[i].procno = pgs_status_slot_procno(i);
		sessions[i].memo.blocker_slot = -1;
	}
	pgs_forget_slot_copies();
	session_strings_size = MAXALIGN(2 * NAMEDATALEN + pgstat_track_activity_query_size);
	session_strings = MemoryContextAllocHuge(TopMemoryContext,
											 session_strings_size * status_slots);
	status_array = find_status_array();
}

/*
 * Read the backend status for a new sample.  Returns the number of sessions
 * to be sampled; *sampled lists their indexes in *copies, the session
 * copies.
 */
int
pgs_read_sessions(SessionCopy **copies, const int **sampled)
{
	nsampled = 0;
	nsessions = status_array ? read_sessions_direct() : read_sessions_snapshot();
	pid_table_reset();
	*copies = sessions;
	*sampled = sampled_list;
	return nsampled;
}

/* The index of a session copy among the copies (one per status slot). */
int
pgs_session_number(const SessionCopy *s)
{
	return s - sessions;
}

/* The private text buffers of a session copy. */
void
pgs_session_texts(const SessionCopy *s, char **appname, char **hostname,
				  char **activity)
{
	session_buffers(s - sessions, appname, hostname, activity);
}

/*
 * The memo of a session read directly from core's array, and (when origin
 * is not NULL) what its texts were copied from; NULL from the snapshot.
 */
ActivityMemo *
pgs_session_memo(const SessionCopy *s, CopyOrigin **origin)
{
	if (s->status_slot < 0)
		return NULL;
	if (origin != NULL)
		*origin = &origins[s->status_slot];
	return &sessions[s->status_slot].memo;
}

/*
 * The session of a blocker pid: usually the one that was the first blocker
 * of this waiter at the previous sample (a lock queue changes slowly), else
 * found by pid.
 */
SessionCopy *
pgs_blocker_session(ActivityMemo *memo, int32 pid)
{
	SessionCopy *s;

	/* pid 0: a prepared transaction, which has no session */
	if (pid > 0 && memo != NULL && memo->blocker_slot >= 0 &&
		sessions[memo->blocker_slot].pid == pid)
		return &sessions[memo->blocker_slot];
	s = pgs_session_by_pid(pid);
	if (memo != NULL)
		memo->blocker_slot = s ? s->status_slot : -1;
	return s;
}

/*
 * Copy the slot of PGPROC number procno into *copy (which has room for
 * slots.size bytes), retrying while its owner is writing.  False if the slot
 * does not belong to pid.  Called by the sampler, without lock.
 */
bool
pgs_read_backend_slot(int procno, int pid, PgsBackendSlot *copy)
{
	PgsBackendSlot *slot = pgs_backend_slot(procno);
	int			attempts;

	for (attempts = 0; slot != NULL && attempts < PGS_SLOT_READ_ATTEMPTS; attempts++)
	{
		uint32		before = pgs_slot_read_begin(slot);
		int			len;

		copy->pid = slot->pid;
		copy->top_queryid = slot->top_queryid;
		copy->top_cmdtype = slot->top_cmdtype;
		copy->nested = slot->nested;
		copy->exec_queryid = slot->exec_queryid;
		copy->exec_cmdtype = slot->exec_cmdtype;
		len = slot->text_len;
		if (len < 0 || len >= pgstat_track_activity_query_size)
			len = 0;
		copy->text_len = len;
		if (copy->nested && len > 0)
			memcpy(copy->text, slot->text, len);
		if (pgs_slot_read_done(slot, before))
			return copy->pid == pid;
		pg_spin_delay();
	}
	return false;
}
