/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		pgsentinel's one shared-memory allocation: its size, its layout, and
 *		the copy-in / copy-out of the ASH ring.
 *
 * LOCKING RULES (the only place they are written down)
 * ----------------------------------------------------
 * pgs_state->lock, one LWLock of the tranche "pgsentinel", protects every
 * non-layout field of PgsSharedState and the three areas it describes: the
 * ASH ring with its text area, the statements ring, and the sampler's
 * request to the statements worker.
 *
 *	- Each area has exactly one writer.  The sampler writes the ASH ring,
 *	  the text area, the request and its own status fields; the statements
 *	  worker writes the statements ring and its status fields.  A writer
 *	  prepares everything in its own memory first (rows, texts, their final
 *	  positions), then takes the lock in LW_EXCLUSIVE mode only to memcpy
 *	  the prepared batch in and update counters.  Nothing is allocated, no
 *	  error can be raised and no system call is made while it is held
 *	  (reading the clock, a vDSO call, excepted).
 *	- The statements worker reads the request by copying it out under
 *	  LW_SHARED, like any reader.
 *	- Readers (the views, pgsentinel_status()) take the lock in LW_SHARED
 *	  mode only to memcpy what they need out, then release it and build
 *	  their result rows from the copy.  A reader therefore never sees a
 *	  half-written row or a sample with rows missing.  LWLocks are released
 *	  by error recovery, so a reader cancelled mid-copy leaves nothing held.
 *	- Layout fields (capacities, offsets, sizes) are set once by the
 *	  postmaster before any other process exists and are read without lock.
 *
 * The backend slots are not protected by the lock.  Each is written only by
 * its own backend, bracketed by a change counter, and read by the sampler
 * with the retry loop in hooks.c (the protocol of st_changecount in core's
 * backend_status.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/backend_status.h"

#include "pgsentinel.h"

PgsSharedState *pgs_state = NULL;

/* Size of one backend slot, text included. */
static Size
backend_slot_size(void)
{
	return MAXALIGN(add_size(offsetof(PgsBackendSlot, text),
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
 * Bytes of shared memory pgsentinel needs for the current settings.  Called
 * in the postmaster after MaxBackends is known.
 */
Size
pgs_shmem_size(void)
{
	Size		size;

	size = MAXALIGN(sizeof(PgsSharedState));
	size = add_size(size, MAXALIGN(mul_size(sizeof(AshRow), pgs_ash_max_entries)));
	size = add_size(size, MAXALIGN(text_area_bytes()));
	size = add_size(size, mul_size(backend_slot_size(), MaxBackends));
	size = add_size(size, MAXALIGN(mul_size(sizeof(PgsshRow), pgs_pgssh_max_entries)));
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
 * postmaster's shmem_startup_hook, and in EXEC_BACKEND children.
 */
void
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

		offset = MAXALIGN(sizeof(PgsSharedState));
		s->ash_capacity = pgs_ash_max_entries;
		s->ash_offset = offset;
		offset += MAXALIGN(mul_size(sizeof(AshRow), pgs_ash_max_entries));

		s->text_size = text_area_bytes();
		s->text_offset = offset;
		offset += MAXALIGN(s->text_size);
		s->text_head = s->text_tail = 0;

		s->nslots = MaxBackends;
		s->slot_size = backend_slot_size();
		s->slots_offset = offset;
		for (i = 0; i < s->nslots; i++)
			memset(pgs_backend_slot(i), 0, s->slot_size);
		offset += mul_size(s->slot_size, s->nslots);

		s->pgssh_capacity = pgs_pgssh_max_entries;
		s->pgssh_offset = offset;
		offset += MAXALIGN(mul_size(sizeof(PgsshRow), pgs_pgssh_max_entries));

		s->request_max_keys = request_max_keys();
		s->request_offset = offset;
		offset += MAXALIGN(mul_size(sizeof(PgsshKey), s->request_max_keys));
		Assert(offset <= pgs_shmem_size());
	}
	LWLockRelease(AddinShmemInitLock);
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
	return (AshRow *) ((char *) pgs_state + pgs_state->ash_offset);
}

/* The text area's bytes. */
char *
pgs_text_area(void)
{
	return (char *) pgs_state + pgs_state->text_offset;
}

/* The statements ring's rows. */
PgsshRow *
pgs_pgssh_rows(void)
{
	return (PgsshRow *) ((char *) pgs_state + pgs_state->pgssh_offset);
}

/* The keys of the sampler's current request. */
PgsshKey *
pgs_request_keys(void)
{
	return (PgsshKey *) ((char *) pgs_state + pgs_state->request_offset);
}

/* The slot of the backend with this PGPROC number, or NULL. */
PgsBackendSlot *
pgs_backend_slot(int procno)
{
	if (pgs_state == NULL || procno < 0 || procno >= pgs_state->nslots)
		return NULL;
	return (PgsBackendSlot *) ((char *) pgs_state + pgs_state->slots_offset +
							   (Size) procno * pgs_state->slot_size);
}

/*
 * Copy the ASH ring (oldest row first) and the text area out for a reader.
 * Memory is allocated before the shared lock is taken; under the lock only
 * memcpy runs.
 */
void
pgs_ash_copy_out(PgsAshCopy *copy)
{
	uint64		capacity = (uint64) pgs_state->ash_capacity;
	AshRow	   *ring = pgs_ash_rows();
	uint64		written;
	uint64		first;
	uint64		n;
	uint64		at;

	copy->rows = MemoryContextAllocHuge(CurrentMemoryContext,
										sizeof(AshRow) * capacity);
	copy->text.area = MemoryContextAllocHuge(CurrentMemoryContext,
											 pgs_state->text_size);

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	written = pgs_state->ash_written;
	n = Min(written, capacity);
	first = written - n;
	at = first % capacity;
	if (at + n <= capacity)
		memcpy(copy->rows, &ring[at], sizeof(AshRow) * n);
	else
	{
		uint64		part = capacity - at;

		memcpy(copy->rows, &ring[at], sizeof(AshRow) * part);
		memcpy(copy->rows + part, ring, sizeof(AshRow) * (n - part));
	}
	pgs_text_snapshot_take(&copy->text);
	LWLockRelease(pgs_state->lock);

	copy->nrows = (int64) n;
}
