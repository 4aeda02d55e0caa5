/*-------------------------------------------------------------------------
 *
 * backend_slot.h
 *		Each backend's slot: what its statement hooks publish (hooks.c) for
 *		the sampler to read, and the request word through which the sampler
 *		asks it for a query id it did not know (queryid_backfill.c).
 *
 * The slots are not protected by the lock: each is written only by its
 * own backend, under a change counter (below).  The rules are written
 * once, at the top of shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_BACKEND_SLOT_H
#define PGS_BACKEND_SLOT_H

#include "datatype/timestamp.h"
#include "port/atomics.h"

/*
 * The cache line the sampler fetches ahead: x86-64's and most ARM cores'.
 * Core's PG_CACHE_LINE_SIZE (128) is padding against false sharing.
 */
#define PGS_FETCH_LINE_SIZE		64

/* The backend slots' part of PgsSharedState: layout, fixed at startup. */
typedef struct PgsSlotsShared
{
	int			count;			/* MaxBackends */
	Size		size;			/* of one slot, text included */
	Size		offset;			/* of the first, from pgs_state */
} PgsSlotsShared;

/*
 * Each backend's slot, written by that backend from the executor and
 * utility hooks, read by the sampler.  Slots start on a cache line
 * (shmem.c), so the header, which every sample reads, is one line.  The
 * writer brackets its stores with changecount increments (odd while
 * writing, as st_changecount in core's backend_status.h); the reader
 * retries until it sees the same even value before and after copying.
 *
 * One field goes the other way: query_id_wanted, which the sampler sets
 * (to the statement start of a row it recorded without a query id: a
 * statement waiting for a lock while it is parsed) and the backend takes
 * back to 0 with an atomic exchange at its next top-level statement, which
 * answers with the query id it then knows: answer_*, written with the
 * changecount protocol.  The request is only a hint (it may reach the next
 * statement, or a later backend in the slot): the sampler uses an answer
 * only for its own request, from the same pid, and for the same statement
 * -- same start, or, with the extended query protocol, where Parse, Bind
 * and Execute start at different times, the same whole text.  A statement
 * that shares its query string with others (several statements in one
 * simple-protocol message: same start, same text) does not answer.
 */
typedef struct PgsBackendSlot
{
	volatile uint32 changecount;
	int32		pid;			/* owner; the slot is stale if it differs */
	uint64		top_queryid;	/* queryid of the last top-level statement */
	uint8		top_cmdtype;	/* its PgsCmdType */
	uint8		nested;			/* exec_* describe a nested statement */
	uint8		exec_cmdtype;
	int32		text_len;		/* bytes of text[] in use (nested only) */
	uint64		exec_queryid;
	pg_atomic_uint64 query_id_wanted;	/* set by the sampler, see above */
	/* read only to complete earlier rows, and in the same line */
	TimestampTz answer_request; /* the query_id_wanted answered */
	uint64		answer_queryid;
	uint32		answer_text_hash;	/* pgs_statement_text_hash() of its text */
	uint8		answer_cmdtype;
	bool		answer_same_start;	/* it started at answer_request */
	bool		answer_text_whole;	/* the hash covers all of its text */
	char		text[FLEXIBLE_ARRAY_MEMBER];	/* track_activity_query_size */
} PgsBackendSlot;

StaticAssertDecl(offsetof(PgsBackendSlot, text) <= PGS_FETCH_LINE_SIZE,
				 "the backend slot header must fit in the one line fetched ahead");

/* The writer's side of a slot's changecount protocol. */
#define PGS_SLOT_BEGIN_WRITE(slot) \
	do { (slot)->changecount++; pg_write_barrier(); } while (0)
#define PGS_SLOT_END_WRITE(slot) \
	do { pg_write_barrier(); (slot)->changecount++; } while (0)

/*
 * The reader's side, as pgstat_begin_read_activity() and
 * pgstat_read_activity_complete() are core's: copy between
 * pgs_slot_read_begin() and pgs_slot_read_done(), and retry (a bounded
 * number of times: a writer never stays long) until done.
 */
#define PGS_SLOT_READ_ATTEMPTS 1000

static inline uint32
pgs_slot_read_begin(const PgsBackendSlot *slot)
{
	uint32		before = slot->changecount;

	pg_read_barrier();
	return before;
}

/* Was what was copied since pgs_slot_read_begin() returned before consistent? */
static inline bool
pgs_slot_read_done(const PgsBackendSlot *slot, uint32 before)
{
	pg_read_barrier();
	return (before & 1) == 0 && slot->changecount == before;
}

/* hooks.c */
extern void pgs_install_hooks(void);

/* backend_status_reader.c: a consistent copy of a slot */
extern bool pgs_read_backend_slot(int procno, int pid, PgsBackendSlot *copy);

/*
 * queryid_backfill.c, the backend's side of the request word.  Has the
 * sampler asked this backend for a query id?  Inline: the hooks test it on
 * every top-level statement.
 */
static inline bool
pgs_query_id_wanted(PgsBackendSlot *slot)
{
	return pg_atomic_read_u64(&slot->query_id_wanted) != 0;
}

extern void pgs_answer_query_id_request(PgsBackendSlot *slot, uint64 queryid,
										uint8 cmdtype, const char *source,
										int location, int len);

#endif							/* PGS_BACKEND_SLOT_H */
