/*-------------------------------------------------------------------------
 *
 * queryid_backfill.c
 *		Query ids completed after the fact.  A statement that waits for a
 *		lock while it is parsed and analysed has no query id yet, and one
 *		sampled while it is planned has no command type yet (that comes
 *		with ExecutorStart or ProcessUtility).  Its rows are remembered
 *		(pid, query_start, ring position) and completed at a later sample,
 *		once core has published the query id of that same execution and
 *		the backend its command type, or once its backend has answered the
 *		sampler's request.
 *
 * This file owns both sides of that request (see PgsBackendSlot): the
 * sampler sets the request word of the backend's slot and reads the answer
 * without lock; the backend answers at its next top-level statement, called
 * from hooks.c only when pgs_query_id_wanted() says it was asked.  The
 * rows are completed in the ring under the lock, by pgs_apply_backfills().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "parser/scansup.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"

#include "compat.h"
#include "pgsentinel.h"
#include "sample/backend_slot.h"
#include "sample/sampler.h"
#include "sample/sessions.h"
#include "store/ash_rows.h"
#include "store/ring.h"

/*
 * Rows waiting for their statement's query id: room for this many at
 * first, doubled as needed up to the ring's capacity (a row overwritten in
 * the ring is forgotten), so that a long queue of statements waiting for a
 * lock while parsed keeps all its rows.
 */
#define PGS_PENDING_INITIAL		1024

/* A row whose query id is to be completed later. */
typedef struct PendingBackfill
{
	uint64		row_index;
	int64		sample_id;		/* the row's sample, and its time */
	TimestampTz sample_time;
	int32		pid;
	int32		procno;			/* its PGPROC number, asked for the query id */
	TimestampTz query_start;
	uint64		queryid;		/* its query id, 0 while parsed */
	uint32		text_hash;		/* pgs_statement_text_hash() of its text */
} PendingBackfill;

/*
 * What becomes of the pending rows of one statement at this sample: all of
 * them share it, so it is worked out once per statement (decide()) and
 * kept, per PGPROC number, for the statement's other rows.
 */
typedef struct BackfillDecision
{
	int64		sample_id;		/* the sample it is of */
	int32		pid;			/* the statement: pid and start */
	TimestampTz query_start;
	uint64		known_queryid;	/* and its pending row's query id, if any */
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
struct PgsBackfill
{
	uint64		row_index;
	int32		pid;
	TimestampTz query_start;
	uint64		queryid;
	uint8		cmdtype;
};

/* A backend's answer to pgs_request_query_id(). */
typedef struct PgsQueryIdAnswer
{
	TimestampTz request;
	uint64		queryid;
	uint32		text_hash;
	uint8		cmdtype;
	bool		same_start;
	bool		text_whole;
} PgsQueryIdAnswer;

/* What a backend answered about a pending row's statement. */
typedef enum BackendAnswer
{
	ANSWER_NONE,				/* nothing (yet), or about another statement */
	ANSWER_CANNOT_TELL,			/* one of several statements of a string */
	ANSWER_FOUND				/* its query id and command type */
} BackendAnswer;

/* Backfill state, private to the sampler process. */
static PendingBackfill *pending = NULL;
static int	npending = 0;
static int	pending_room = 0;	/* allocated entries of pending[] */
static PendingText *pending_texts = NULL;	/* per session copy */
static BackfillDecision *decisions = NULL;	/* per PGPROC number */
static PgsBackendSlot *slot_copy = NULL;

/*
 * Is the statement at location/len the only one of its query string?  The
 * raw parser gives the first statement location 0, and a length of 0 when
 * it runs to the end of the string.
 */
static bool
sole_statement(const char *source, int location, int len)
{
	const char *p;

	if (location > 0)
		return false;
	if (len <= 0)
		return true;
	for (p = source + len; *p != '\0'; p++)
		if (!scanner_isspace(*p) && *p != ';')
			return false;
	return true;
}

/*
 * A hash of a statement text as the sampler sees it in pg_stat_activity's
 * raw copy (at most track_activity_query_size - 1 bytes), so that the
 * backend's full text and the sampler's copy hash the same.
 */
static uint32
pgs_statement_text_hash(const char *text)
{
	return hash_bytes((const unsigned char *) text,
					  (int) strnlen(text, pgstat_track_activity_query_size - 1));
}

/*
 * The sampler asked for the query id of a statement it saw without one
 * (see PgsBackendSlot): this top-level statement answers with its own,
 * whether it started when the one asked about did, and a hash of its text,
 * from which the sampler decides whether it is that statement.  One that
 * shares its query string with other statements (same start, same text:
 * any of them could be the one asked about) answers 0, "cannot tell", as
 * one without a query id does.
 */
void
pgs_answer_query_id_request(PgsBackendSlot *slot, uint64 queryid,
							uint8 cmdtype, const char *source, int location,
							int len)
{
	TimestampTz request = (TimestampTz)
		pg_atomic_exchange_u64(&slot->query_id_wanted, 0);
	const char *text = debug_query_string;

	if (request == 0 || text == NULL)
		return;
	if (source == NULL || !sole_statement(source, location, len))
		queryid = 0;
	PGS_SLOT_BEGIN_WRITE(slot);
	slot->answer_request = request;
	slot->answer_queryid = queryid;
	slot->answer_text_hash = pgs_statement_text_hash(text);
	slot->answer_cmdtype = cmdtype;
	slot->answer_same_start = GetCurrentStatementStartTimestamp() == request;
	slot->answer_text_whole =
		strnlen(text, pgstat_track_activity_query_size) <
		(size_t) pgstat_track_activity_query_size - 1;
	PGS_SLOT_END_WRITE(slot);
}

/*
 * Ask the backend at PGPROC number procno for the query id of the
 * statement that started at query_start (see PgsBackendSlot).  Called by
 * the sampler, without lock.
 */
static void
pgs_request_query_id(int procno, TimestampTz query_start)
{
	PgsBackendSlot *slot = pgs_backend_slot(procno);

	if (slot != NULL && query_start != 0 &&
		pg_atomic_read_u64(&slot->query_id_wanted) != (uint64) query_start)
		pg_atomic_write_u64(&slot->query_id_wanted, (uint64) query_start);
}

/*
 * Is the request for the statement that started at query_start still
 * waiting for the backend pid at PGPROC number procno to answer it?
 */
static bool
pgs_query_id_requested(int procno, int pid, TimestampTz query_start)
{
	PgsBackendSlot *slot = pgs_backend_slot(procno);

	return slot != NULL && slot->pid == pid &&
		pg_atomic_read_u64(&slot->query_id_wanted) == (uint64) query_start;
}

/*
 * Copy the answer to the last pgs_request_query_id() made of the slot of
 * PGPROC number procno, retrying while its owner is writing.  False if the
 * slot does not belong to pid or there is no answer.  Called by the
 * sampler, without lock.
 */
static bool
pgs_read_query_id_answer(int procno, int pid, PgsQueryIdAnswer *answer)
{
	PgsBackendSlot *slot = pgs_backend_slot(procno);
	int			attempts;

	for (attempts = 0; slot != NULL && attempts < PGS_SLOT_READ_ATTEMPTS; attempts++)
	{
		uint32		before = pgs_slot_read_begin(slot);
		int32		owner = slot->pid;

		answer->request = slot->answer_request;
		answer->queryid = slot->answer_queryid;
		answer->text_hash = slot->answer_text_hash;
		answer->cmdtype = slot->answer_cmdtype;
		answer->same_start = slot->answer_same_start;
		answer->text_whole = slot->answer_text_whole;
		if (pgs_slot_read_done(slot, before))
			return owner == pid && answer->request != 0;
		pg_spin_delay();
	}
	return false;
}

/* One-time setup of the sampler's pending rows and decisions. */
void
pgs_backfill_init(void)
{
	slot_copy = MemoryContextAlloc(TopMemoryContext, pgs_state->slots.size);
	decisions = MemoryContextAllocZero(TopMemoryContext,
									   sizeof(BackfillDecision) *
									   Max(pgs_state->slots.count, 1));
	pending_room = Min(PGS_PENDING_INITIAL,
					   (int) pgs_state->sampler.ash.capacity);
	pending = MemoryContextAlloc(TopMemoryContext,
								 sizeof(PendingBackfill) * pending_room);
	pending_texts = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(PendingText) *
										   pgs_backend_status_slots());
}

/*
 * Is there room for one more pending row?  Doubles pending[] when full, up
 * to the ring's capacity; without the memory, the row is not remembered.
 */
bool
pgs_room_for_pending(void)
{
	int			room;
	PendingBackfill *bigger;

	if (npending < pending_room)
		return true;
	if (pending_room >= (int) pgs_state->sampler.ash.capacity)
		return false;
	room = (int) Min((int64) pending_room * 2,
					 (int64) pgs_state->sampler.ash.capacity);
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
 * waiting for a lock, most of the time) or no command type yet (it is
 * being planned), and ask its backend for them: it answers at its next
 * statement, and the answer outlives the statement (see PgsBackendSlot).
 */
void
pgs_remember_pending(const AshRow *row, const SessionCopy *local,
					 uint64 row_index)
{
	PendingBackfill *p = &pending[npending];
	PGPROC	   *proc = pgs_session_proc(local);
	int			n = pgs_session_number(local);
	PendingText *text = &pending_texts[n];

	if (proc == NULL)
		return;
	/* a statement waits many samples: its text is hashed once */
	if (text->pid != row->pid || text->query_start != row->query_start)
	{
		char	   *appname;
		char	   *hostname;
		char	   *activity;

		pgs_session_texts(local, &appname, &hostname, &activity);
		text->pid = row->pid;
		text->query_start = row->query_start;
		text->hash = pgs_statement_text_hash(activity);
	}
	p->row_index = row_index;
	p->sample_id = row->sample_id;
	p->sample_time = row->ash_time;
	p->pid = row->pid;
	p->procno = pgs_proc_number(proc);
	p->query_start = row->query_start;
	p->queryid = row->queryid;
	p->text_hash = text->hash;
	npending++;
	pgs_request_query_id(p->procno, p->query_start);
}

/* What the backend of pending row p answered about its statement. */
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
	bool		same_start;
	PgsQueryIdAnswer answer;

	d->fill = false;
	d->keep = false;
	/* the backend answered: its statement may have ended since */
	switch (backend_answer(p, &answer))
	{
		case ANSWER_CANNOT_TELL:
			if (p->queryid == 0)
				return;
			break;				/* the slot may still tell its command type */
		case ANSWER_FOUND:
			d->fill = true;
			d->queryid = answer.queryid;
			d->cmdtype = answer.cmdtype;
			return;
		case ANSWER_NONE:
			break;
	}
	be = pgs_session_by_pid(p->pid);
	if (be == NULL)
		return;					/* gone: cannot be known any more */
	running = be->state == STATE_RUNNING || be->state == STATE_FASTPATH;
	same_start = be->activity_start == p->query_start;
	if (p->queryid != 0)
		d->queryid = p->queryid;
	else if (same_start)
		d->queryid = be->query_id;
	else
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
	if (d->queryid == 0)
	{
		/*
		 * Still being analysed; or it ended without a query id (an error, a
		 * cancel, compute_query_id off): it never will have one, and must
		 * not hold a place while the session idles.
		 */
		d->keep = running;
		return;
	}

	/*
	 * The command type is the one the backend published for that query id:
	 * a query id stands for one command type, so the backend's last
	 * top-level statement may tell it even after the statement ended.
	 */
	d->cmdtype = PGS_CMD_UNKNOWN;
	proc = pgs_session_proc(be);
	if (proc &&
		pgs_read_backend_slot(pgs_proc_number(proc), p->pid, slot_copy))
	{
		if (slot_copy->top_queryid == d->queryid)
			d->cmdtype = slot_copy->top_cmdtype;
		else if (slot_copy->nested && slot_copy->exec_queryid == d->queryid)
			d->cmdtype = slot_copy->exec_cmdtype;
	}
	/* a row that has its query id changes only with its command type */
	d->fill = p->queryid == 0 || d->cmdtype != PGS_CMD_UNKNOWN;
	/*
	 * Analysed but not executing yet: the command type comes later, from
	 * the slot or from the backend's answer once it executes.
	 */
	d->keep = d->cmdtype == PGS_CMD_UNKNOWN && running &&
		(same_start ||
		 pgs_query_id_requested(p->procno, p->pid, p->query_start));
}

/*
 * The oldest sample taken after newer_than with rows still waiting for
 * their query id or command type, and its time in *sample_time; 0 when no
 * such row waits.
 */
int64
pgs_oldest_pending_sample(TimestampTz *sample_time, TimestampTz newer_than)
{
	int64		oldest = 0;
	int			i;

	*sample_time = 0;
	for (i = 0; i < npending; i++)
	{
		if (pending[i].sample_time <= newer_than)
			continue;
		if (oldest == 0 || pending[i].sample_id < oldest)
		{
			oldest = pending[i].sample_id;
			*sample_time = pending[i].sample_time;
		}
	}
	return oldest;
}

/*
 * Rows of earlier samples whose query id was not known yet: find the ones
 * this snapshot completes, drop the ones that can no longer be completed.
 * Returns their number, and them in *fills, allocated in the current memory
 * context.  ash_written rows have been appended before this sample.
 */
int
pgs_find_backfills(PgsBackfill **fills, uint64 ash_written, int64 sample_id)
{
	PgsBackfill *out = palloc_extended(sizeof(PgsBackfill) *
									   (Size) Max(npending, 1),
									   MCXT_ALLOC_HUGE);
	int			nout = 0;
	int			i;
	int			keep = 0;
	uint64		oldest_row = ash_written > pgs_state->sampler.ash.capacity ?
		ash_written - pgs_state->sampler.ash.capacity : 0;

	for (i = 0; i < npending; i++)
	{
		PendingBackfill *p = &pending[i];
		BackfillDecision one;
		BackfillDecision *d = &one;

		if (p->row_index < oldest_row)
			continue;
		if (p->procno >= 0 && p->procno < pgs_state->slots.count)
			d = &decisions[p->procno];
		if (d == &one || d->sample_id != sample_id ||
			d->pid != p->pid || d->query_start != p->query_start ||
			d->known_queryid != p->queryid)
		{
			decide(p, d);
			d->sample_id = sample_id;
			d->pid = p->pid;
			d->query_start = p->query_start;
			d->known_queryid = p->queryid;
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
	*fills = out;
	return nout;
}

/*
 * Complete the rows of the ring that fills describe, those that are still
 * in it (ash_written rows have been appended).  Called with the lock held
 * exclusively; stores only.
 */
void
pgs_apply_backfills(const PgsBackfill *fills, int nfills, uint64 ash_written)
{
	uint64		capacity = pgs_state->sampler.ash.capacity;
	uint64		oldest_row;
	int			i;

	oldest_row = ash_written > capacity ? ash_written - capacity : 0;
	for (i = 0; i < nfills; i++)
	{
		const PgsBackfill *f = &fills[i];
		AshRow	   *r;

		if (f->row_index < oldest_row)
			continue;
		r = pgs_ring_begin_update(&pgs_state->sampler.ash, f->row_index);
		if (r->pid == f->pid && r->query_start == f->query_start)
		{
			if (r->queryid == 0)
			{
				r->queryid = f->queryid;
				if (r->nested_queryid == 0)
					r->nested_queryid = f->queryid;
				pgs_state->sampler.rows_backfilled++;
			}
			if (r->cmdtype == PGS_CMD_UNKNOWN && r->queryid == f->queryid)
				r->cmdtype = f->cmdtype;
		}
		pgs_ring_end_update(&pgs_state->sampler.ash, f->row_index);
	}
}
