/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		pgsentinel's one shared-memory allocation: its size and its layout.
 *
 * LOCKING RULES (the only place they are written down)
 * ----------------------------------------------------
 * pgs_state->lock, one LWLock of the tranche "pgsentinel", protects every
 * non-layout field of PgsSharedState and the areas it describes: the ASH
 * ring with its text area, the ring of samples, the statements ring, and
 * the sampler's request to the statements worker -- against the other
 * writers and the status readers.  The readers of the rings and the text
 * area do not take it (below).
 *
 *	- Each area has exactly one writer.  The sampler writes the ASH ring,
 *	  the ring of samples (with the same lock hold as the rows), the text
 *	  area, the request and its own status fields; the statements worker
 *	  writes the statements ring and its status fields; the archiver its
 *	  status fields.  Two fields have two writers: the state and message of
 *	  the statements history and of the archive are also set by the sampler
 *	  (when it launches the worker, or finds it gone or disabled); both
 *	  write them only under the exclusive lock.  A writer
 *	  prepares everything in its own memory first (rows, texts, their final
 *	  positions), then takes the lock in LW_EXCLUSIVE mode only to memcpy
 *	  the prepared batch in and update counters, always through
 *	  pgs_lock_exclusive() and pgs_unlock_exclusive().  Nothing is allocated, no
 *	  error can be raised and no system call is made while it is held
 *	  (reading the clock, a vDSO call, excepted).
 *	- A writer reads what only it writes without the lock (the sampler its
 *	  own text entries while deduplicating and the text area's head and
 *	  tail when it starts, text_area.c; each ring's writer its counters):
 *	  nobody else can change them.
 *	- The statements worker copies the request out under the lock (in
 *	  exclusive mode, as it also counts skipped requests); while it rests
 *	  between readings it looks at the pending request's size in shared
 *	  mode.
 *	- The archiver reads sampler.last_sample_id and the oldest sample with
 *	  rows still waiting for a query id (sampler.pending_sample_id and
 *	  pending_sample_time, which the sampler stores with the sample)
 *	  together in shared mode, so that it never takes a sample whose waiting
 *	  rows it cannot know of.
 *	- The archiver's latch and the heads of the text area and the rings as
 *	  of its last step (archiver.latch, archiver.text_head, ash_head,
 *	  statements_head) are written by the archiver under the exclusive lock;
 *	  the sampler (texts, ASH ring) and the statements worker (statements
 *	  ring) read them, and write where they last woke the archiver
 *	  (archiver.text_woken, ash_woken, statements_woken) and archiver.wake,
 *	  only in their own exclusive hold, and call SetLatch() after releasing
 *	  it; the archiver reads and clears archiver.wake under the lock, and
 *	  in the same hold, when woken or reloaded, reads sampler.last_sample_id
 *	  as the newest sample archiving was asked for.
 *	- statements.request_taken_seq, the last request the statements worker
 *	  took, is an atomic written by that worker under the lock and read by
 *	  the sampler without it (a stale value only makes it carry a request
 *	  over once more).
 *	- Status readers (pgsentinel_status()) take the lock in LW_SHARED mode
 *	  to copy a few fields and release it; the planner's row estimate reads
 *	  the ring's written counter, an atomic, without it.
 *	- Readers of the rings and of the text area (the views) take no lock:
 *	  they copy, then validate what they copied, so that a reader, however
 *	  slow or descheduled, never makes a writer wait.  This departs from
 *	  the rule the status readers above follow (hold the shared lock only
 *	  to copy out): with the lock, a reader descheduled in the middle of a
 *	  chunk would hold the sampler up for a scheduler time slice.  The
 *	  rings use per-chunk sequence counters and the
 *	  claimed/written counters described in ring.c; the text area is
 *	  written in an order that lets a copy tell whether an entry it copied
 *	  is whole: the writer moves text.tail past the entries it will
 *	  overwrite before it writes any byte, and moves text.head past the new
 *	  entries after their last byte; a reader reads text.head, copies one
 *	  entry, then reads text.tail, and uses the entry only if it lies
 *	  between the two (pgs_text_lookup()).  No reader sees a torn row or
 *	  text.  Readers copy a ring a chunk at a time and the text area an
 *	  entry at a time: their memory does not grow with either (ring.c).
 *	- pgsentinel_reset() (reset.c) takes the lock exclusively to move each
 *	  area's first visible row or entry; readers read those atomics without
 *	  it, once per query (pgs_ring_query_bounds()).  A reset stores the
 *	  rings' starts, then the text floor, with barriers between; a query
 *	  reads the text floor first, then its rows' bounds, then the reset's
 *	  sample id, so that its rows keep their texts and bounds from after a
 *	  reset come with that reset's sample id.
 *	- Layout fields (capacities, offsets, sizes) and sampler.history_id are
 *	  set once by the postmaster before any other process exists (the
 *	  history id from the history file, persist.c) and are read without
 *	  lock.
 *
 * The backend slots are not protected by the lock.  Each is written only by
 * its own backend, bracketed by a change counter, and read by the sampler
 * with the retry loop in backend_status_reader.c (the protocol of
 * st_changecount in core's backend_status.h) -- except one atomic word, query_id_wanted, which the
 * sampler sets and the backend takes back with an atomic exchange (see
 * PgsBackendSlot in sample/backend_slot.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "pgsentinel.h"
#include "sample/backend_slot.h"
#include "statements/pgssh.h"
#include "store/ash_rows.h"
#include "store/ring.h"

PgsSharedState *pgs_state = NULL;

/*
 * Size of one backend slot, text included, in whole cache lines: the slots
 * start on a line (see pgs_shmem_startup), so the header every sample reads
 * lies in one line, the one the sampler fetches ahead, and a backend's
 * writes never share a line with its neighbour's header.  (At 1064 bytes,
 * MAXALIGNed only, about two headers in five straddled two lines, and the
 * second line was a demand miss: pgs_read_backend_slot was a tenth of the
 * sampler's time.)
 */
static Size
backend_slot_size(void)
{
	return TYPEALIGN(PG_CACHE_LINE_SIZE,
					 add_size(offsetof(PgsBackendSlot, text),
							  pgstat_track_activity_query_size));
}

/*
 * Keys one request can carry: a top-level and a nested statement for every
 * session, plus as many statements that finished since the last sample.
 */
static int
request_max_keys(void)
{
	return 4 * MaxBackends;
}

/* Size of the text area, in bytes, from its setting. */
static Size
text_area_bytes(void)
{
	return (Size) pgs_text_area_kb * 1024;
}

/*
 * Samples kept: as many as rows, so that the samples of every row still in
 * the ASH ring are there too (a sample without an active session writes no
 * row but still needs its entry, so on a quiet server the list of samples
 * wraps before the rows do, and the oldest rows then have no sample entry).
 */
static uint64
samples_capacity(void)
{
	return (uint64) pgs_ash_max_entries;
}

/*
 * Bytes of shared memory pgsentinel needs for the current settings.  Called
 * in the postmaster after MaxBackends is known.
 */
Size
pgs_shmem_size(void)
{
	Size		size;

	size = MAXALIGN(sizeof(PgsSharedState));
	size = add_size(size, pgs_ring_size(sizeof(AshRow), pgs_ash_max_entries));
	size = add_size(size, pgs_ring_size(sizeof(PgsSampleRow), samples_capacity()));
	size = add_size(size, MAXALIGN(text_area_bytes()));
	size = add_size(size, PG_CACHE_LINE_SIZE);	/* to align the slots */
	size = add_size(size, mul_size(backend_slot_size(), MaxBackends));
	size = add_size(size, pgs_ring_size(sizeof(PgsshRow), pgs_pgssh_max_entries));
	size = add_size(size, MAXALIGN(mul_size(sizeof(PgsshKey), request_max_keys())));
	return size;
}

/*
 * Ask for the shared memory and the lock.  Runs in the postmaster's
 * shmem_request_hook.  The figure is logged so that a DBA whose server
 * refuses to start for lack of memory can see which settings to lower.
 */
void
pgs_shmem_request(void)
{
	Size		size = pgs_shmem_size();

	RequestAddinShmemSpace(size);
	RequestNamedLWLockTranche(PGS_NAME, 1);

	if (size >= (Size) 256 * 1024 * 1024)
		ereport(LOG,
				(errmsg("pgsentinel requests %zu MB of shared memory",
						size / (1024 * 1024)),
				 errdetail("pgsentinel_ash.max_entries = %d rows of %zu bytes, pgsentinel_ash.text_area_size = %d kB.",
						   pgs_ash_max_entries, sizeof(AshRow), pgs_text_area_kb),
				 errhint("If the server cannot allocate it, lower pgsentinel_ash.max_entries or pgsentinel_ash.text_area_size.")));
}

/*
 * Attach to (or create and lay out) the allocation.  Runs in the
 * postmaster's shmem_startup_hook, and in EXEC_BACKEND children.  Returns
 * true when this call created it.
 */
bool
pgs_shmem_startup(void)
{
	bool		found;
	Size		offset;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pgs_state = ShmemInitStruct(PGS_NAME, pgs_shmem_size(), &found);
	if (!found)
	{
		PgsSharedState *s = pgs_state;
		int			i;

		memset(s, 0, sizeof(PgsSharedState));
		s->lock = &(GetNamedLWLockTranche(PGS_NAME))->lock;
		pg_atomic_init_u64(&s->statements.request_taken_seq, 0);

		offset = MAXALIGN(sizeof(PgsSharedState));
		offset = pgs_ring_init(&s->sampler.ash, sizeof(AshRow),
							   pgs_ash_max_entries, offset);
		offset = pgs_ring_init(&s->sampler.samples, sizeof(PgsSampleRow),
							   samples_capacity(), offset);
		if (!pg_strong_random(&s->sampler.history_id,
							   sizeof(s->sampler.history_id)))
			s->sampler.history_id =
				(uint64) GetCurrentTimestamp() ^ (uint64) MyProcPid;

		s->text.size = text_area_bytes();
		s->text.offset = offset;
		offset += MAXALIGN(s->text.size);
		pg_atomic_init_u64(&s->text.head, 0);
		pg_atomic_init_u64(&s->text.tail, 0);
		pg_atomic_init_u64(&s->text.visible_from, 0);
		pg_atomic_init_u64(&s->reset.sample_id, 0);
		pg_atomic_init_u64(&s->reset.count, 0);

		s->slots.count = MaxBackends;
		s->slots.size = backend_slot_size();
		/* on a line: ShmemInitStruct returns a cache-line aligned start */
		offset = CACHELINEALIGN(offset);
		s->slots.offset = offset;
		Assert(s->slots.count == 0 ||
			   (uintptr_t) pgs_backend_slot(0) % PG_CACHE_LINE_SIZE == 0);
		for (i = 0; i < s->slots.count; i++)
		{
			memset(pgs_backend_slot(i), 0, s->slots.size);
			pg_atomic_init_u64(&pgs_backend_slot(i)->query_id_wanted, 0);
		}
		offset += mul_size(s->slots.size, s->slots.count);

		offset = pgs_ring_init(&s->statements.ring, sizeof(PgsshRow),
							   pgs_pgssh_max_entries, offset);

		s->statements.request_max_keys = request_max_keys();
		s->statements.request_offset = offset;
		offset += MAXALIGN(mul_size(sizeof(PgsshKey),
									 s->statements.request_max_keys));
		Assert(offset <= pgs_shmem_size());
	}
	LWLockRelease(AddinShmemInitLock);
	return !found;
}

/*
 * Raise a clear error when the library was not preloaded: every SQL entry
 * point calls this first.
 */
void
pgs_check_loaded(void)
{
	if (pgs_state == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pgsentinel must be loaded via shared_preload_libraries"),
				 errhint("Add pgsentinel to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* The ASH ring's rows. */
AshRow *
pgs_ash_rows(void)
{
	return (AshRow *) pgs_ring_rows(&pgs_state->sampler.ash);
}

/* The text area's bytes. */
char *
pgs_text_area(void)
{
	return (char *) pgs_state + pgs_state->text.offset;
}

/* The statements ring's rows. */
PgsshRow *
pgs_pgssh_rows(void)
{
	return (PgsshRow *) pgs_ring_rows(&pgs_state->statements.ring);
}

/* The keys of the sampler's current request. */
PgsshKey *
pgs_request_keys(void)
{
	return (PgsshKey *) ((char *) pgs_state +
						 pgs_state->statements.request_offset);
}

/* The slot of the backend with this PGPROC number, or NULL. */
PgsBackendSlot *
pgs_backend_slot(int procno)
{
	if (pgs_state == NULL || procno < 0 || procno >= pgs_state->slots.count)
		return NULL;
	return (PgsBackendSlot *) ((char *) pgs_state + pgs_state->slots.offset +
							   (Size) procno * pgs_state->slots.size);
}

/*
 * Take pgs_state->lock exclusively, for a writer.  Returns the microseconds
 * waited (pgsentinel_status() shows the longest wait of the sampler).
 */
int64
pgs_lock_exclusive(void)
{
	TimestampTz before;

	if (LWLockConditionalAcquire(pgs_state->lock, LW_EXCLUSIVE))
		return 0;
	before = GetCurrentTimestamp();
	LWLockAcquire(pgs_state->lock, LW_EXCLUSIVE);
	return GetCurrentTimestamp() - before;
}

/* Release what pgs_lock_exclusive() took. */
void
pgs_unlock_exclusive(void)
{
	Assert(LWLockHeldByMeInMode(pgs_state->lock, LW_EXCLUSIVE));
	LWLockRelease(pgs_state->lock);
}

/*
 * Map every page of [start, start + size) into this process by reading one
 * byte per page.  Shared memory is mapped into each process lazily, one
 * minor page fault per page at first touch; a writer calls this once at
 * start so that its first lap around a ring does not pay a fault every few
 * rows.  Reads only: the contents are left as they are.  At most the first
 * PGS_PREFAULT_MAX bytes: a huge ring (up to 8.8 GB) is not committed all
 * at once, nor does it delay the start by seconds.
 */
#define PGS_PREFAULT_MAX	((Size) 1024 * 1024 * 1024)

void
pgs_prefault(const void *start, Size size)
{
	const volatile char *p = (const volatile char *) start;
	Size		page = 4096;
	Size		off;

	size = Min(size, PGS_PREFAULT_MAX);
	for (off = 0; off < size; off += page)
		(void) p[off];
	if (size > 0)
		(void) p[size - 1];
}

