/*-------------------------------------------------------------------------
 *
 * ring.c
 *		Rings of fixed-size rows with one writer and readers that copy
 *		them out without taking any lock.
 *
 * The ASH ring and the statements ring are each written by one process
 * (the sampler, the statements worker).  Readers used to copy them under
 * pgs_state->lock in shared mode, 128 kB at a time; on a loaded host a
 * reader descheduled while holding the lock kept the sampler waiting for a
 * scheduler time slice (20 ms measured by the benchmark).  A reader now
 * takes no lock: it copies, then checks that what it copied was not being
 * written meanwhile, the protocol of a sequence lock, so the writer never
 * waits for a reader.
 *
 * The rows are divided into chunks of about RING_CHUNK_BYTES, each with a
 * sequence counter that is odd while the writer changes any row of that
 * chunk.  Two further counters order whole appends:
 *
 *	claimed	 rows appended or being appended: raised before the first byte
 *			 of an append is written;
 *	written	 rows completely appended: raised after its last byte.
 *
 * Writer, appending (pgs_ring_append): claimed is raised, then, chunk by
 * chunk, the counter is made odd, the rows are copied, the counter is made
 * even; then written is raised.  claimed and written are plain atomic
 * stores (no barrier of their own); the counter updates are atomic
 * read-modify-write operations, full memory barriers, and one follows the
 * store of claimed and one precedes the store of written, so every store
 * is seen in that order.  Changing a row in place (the sampler completing
 * a query id: pgs_ring_begin_update/end_update) only brackets it with its
 * chunk's counter: the row keeps its place and identity, and a reader gets
 * it either before or after the change.
 *
 * Reader (pgs_ring_copy_out): reads written, then copies rows [written -
 * capacity, written) chunk by chunk; a chunk whose counter was odd, or
 * changed while it was copied, is copied again.  A consistent chunk may
 * still hold rows newer than the reader asked for, written after it read
 * written (the ring wrapped meanwhile): after the copy it reads claimed,
 * and any row older than claimed - capacity is dropped from the result.
 * If the copy of a chunk holds any byte of an append, the reader saw that
 * chunk's counter after the append's second increment, so (a read barrier
 * between) it sees the append's claimed or a later one.  The result is
 * therefore always a contiguous, untorn run of rows, the newest up to the
 * value of written first read, some of the oldest possibly dropped.
 *
 * Between the two increments of a counter the writer only copies and
 * stores: nothing there may raise an error or accept an interrupt.  A
 * writer that stopped in between would leave the counter odd (readers wait
 * for it) and, once restarted, write with the parity reversed; only a
 * crash can stop it there, and after a crash the postmaster reinitialises
 * shared memory.  The writer holds pgs_state->lock exclusively, which also
 * holds off interrupts (asserted): that serialises it with the status
 * readers, who look at single rows under the lock and at nothing else.
 *
 * A reader can be made to retry by a writer, never the other way round.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "pgsentinel.h"

/* Bytes of rows one sequence counter covers. */
#define RING_CHUNK_BYTES	(64 * 1024)

static uint32
chunk_rows_for(Size row_size)
{
	return (uint32) Max(1, RING_CHUNK_BYTES / row_size);
}

/* Bytes a ring of this many rows takes: rows, then one counter per chunk. */
Size
pgs_ring_size(Size row_size, uint64 capacity)
{
	uint64		nchunks = (capacity + chunk_rows_for(row_size) - 1) /
		chunk_rows_for(row_size);

	return add_size(MAXALIGN(mul_size(row_size, capacity)),
					MAXALIGN(mul_size(sizeof(pg_atomic_uint32), nchunks)));
}

/*
 * Lay out a ring at offset bytes from pgs_state; returns the offset just
 * past it.  Runs in the postmaster.
 */
Size
pgs_ring_init(PgsRing *ring, Size row_size, uint64 capacity, Size offset)
{
	pg_atomic_uint32 *seqs;
	uint64		nchunks;
	uint64		i;

	ring->capacity = capacity;
	ring->row_size = row_size;
	ring->chunk_rows = chunk_rows_for(row_size);
	ring->rows_offset = offset;
	ring->seqs_offset = offset + MAXALIGN(mul_size(row_size, capacity));
	pg_atomic_init_u64(&ring->written, 0);
	pg_atomic_init_u64(&ring->claimed, 0);

	nchunks = (capacity + ring->chunk_rows - 1) / ring->chunk_rows;
	seqs = (pg_atomic_uint32 *) ((char *) pgs_state + ring->seqs_offset);
	for (i = 0; i < nchunks; i++)
		pg_atomic_init_u32(&seqs[i], 0);
	return offset + pgs_ring_size(row_size, capacity);
}

/* The ring's rows. */
char *
pgs_ring_rows(const PgsRing *ring)
{
	return (char *) pgs_state + ring->rows_offset;
}

/* The sequence counter of the chunk holding ring position at. */
static inline pg_atomic_uint32 *
chunk_seq(const PgsRing *ring, uint64 at)
{
	return (pg_atomic_uint32 *) ((char *) pgs_state + ring->seqs_offset) +
		at / ring->chunk_rows;
}

/* Rows appended so far. */
uint64
pgs_ring_written(PgsRing *ring)
{
	return pg_atomic_read_u64(&ring->written);
}

/*
 * Append n rows (more than the capacity only overwrites the first ones).
 * Only the ring's writer calls this, with pgs_state->lock held
 * exclusively.
 */
void
pgs_ring_append(PgsRing *ring, const void *rows, uint64 n)
{
	uint64		written = pg_atomic_read_u64(&ring->written);
	uint64		done = 0;

	Assert(LWLockHeldByMeInMode(pgs_state->lock, LW_EXCLUSIVE));
	pg_atomic_write_u64(&ring->claimed, written + n);
	while (done < n)
	{
		uint64		at = (written + done) % ring->capacity;
		uint64		chunk_end = (at / ring->chunk_rows + 1) * ring->chunk_rows;
		uint64		count = Min(n - done, Min(chunk_end, ring->capacity) - at);
		pg_atomic_uint32 *seq = chunk_seq(ring, at);

		pg_atomic_fetch_add_u32(seq, 1);	/* odd: being written */
		memcpy(pgs_ring_rows(ring) + at * ring->row_size,
			   (const char *) rows + done * ring->row_size,
			   count * ring->row_size);
		pg_atomic_fetch_add_u32(seq, 1);	/* even again */
		done += count;
	}
	pg_atomic_write_u64(&ring->written, written + n);
}

/*
 * Change the row at row_index in place (it must still be in the ring):
 * returns it, to be changed before pgs_ring_end_update.  Same caller rules
 * as pgs_ring_append.
 */
void *
pgs_ring_begin_update(PgsRing *ring, uint64 row_index)
{
	uint64		at = row_index % ring->capacity;

	Assert(LWLockHeldByMeInMode(pgs_state->lock, LW_EXCLUSIVE));
	pg_atomic_fetch_add_u32(chunk_seq(ring, at), 1);
	return pgs_ring_rows(ring) + at * ring->row_size;
}

void
pgs_ring_end_update(PgsRing *ring, uint64 row_index)
{
	pg_atomic_fetch_add_u32(chunk_seq(ring, row_index % ring->capacity), 1);
}

/*
 * Copy count rows from ring position at (all in one chunk) to dst,
 * consistently: again while the writer is changing that chunk.
 */
static void
copy_chunk(PgsRing *ring, uint64 at, uint64 count, char *dst)
{
	pg_atomic_uint32 *seq = chunk_seq(ring, at);
	int			tries = 0;
	long		nap_us = 10;

	for (;;)
	{
		uint32		before = pg_atomic_read_u32(seq);

		if ((before & 1) == 0)
		{
			pg_read_barrier();
			memcpy(dst, pgs_ring_rows(ring) + at * ring->row_size,
				   count * ring->row_size);
			pg_read_barrier();
			if (pg_atomic_read_u32(seq) == before)
				return;
		}
		/*
		 * The writer is in this chunk for microseconds: spin, then nap,
		 * longer each time (up to 1 ms) should it have been descheduled.
		 */
		if (++tries < 100)
			pg_spin_delay();
		else
		{
			CHECK_FOR_INTERRUPTS();
			pg_usleep(nap_us);
			nap_us = Min(nap_us * 2, 1000);
		}
	}
}

/*
 * Copy the ring out for a reader, oldest row first, into memory allocated
 * in the current context.  Takes no lock.  Returns the first row and sets
 * *nrows.
 */
char *
pgs_ring_copy_out(PgsRing *ring, int64 *nrows)
{
	uint64		capacity = ring->capacity;
	uint64		written;
	uint64		claimed;
	uint64		first;
	uint64		keep_from;
	uint64		idx;
	char	   *buf;

	written = pg_atomic_read_u64(&ring->written);
	pg_read_barrier();
	first = written - Min(written, capacity);
	buf = MemoryContextAllocHuge(CurrentMemoryContext,
								 Max(written - first, 1) * ring->row_size);
	for (idx = first; idx < written;)
	{
		uint64		at = idx % capacity;
		uint64		chunk_end = (at / ring->chunk_rows + 1) * ring->chunk_rows;
		uint64		count = Min(written - idx, Min(chunk_end, capacity) - at);

		copy_chunk(ring, at, count, buf + (idx - first) * ring->row_size);
		idx += count;
		CHECK_FOR_INTERRUPTS();
	}

	/* drop what the writer may have overwritten while we copied */
	pg_read_barrier();
	claimed = pg_atomic_read_u64(&ring->claimed);
	keep_from = Max(first, claimed - Min(claimed, capacity));
	keep_from = Min(keep_from, written);
	*nrows = (int64) (written - keep_from);
	return buf + (keep_from - first) * ring->row_size;
}

/*
 * Saving and restoring a ring (persist.c), when no writer runs: the
 * postmaster at shutdown, after every other process has exited, and at
 * startup, before any exists.
 *
 * The rows of ring indexes [*first, *end) that are whole.  A writer killed
 * in the middle of an append or an update (immediate shutdown) left the
 * rows of [written, claimed) unfinished and, if the ring wrapped, the
 * oldest rows partly overwritten; and the counter of the chunk it was in
 * odd: pgs_ring_row_whole() says whether a row's chunk is one of those.
 */
void
pgs_ring_whole_range(PgsRing *ring, uint64 *first, uint64 *end)
{
	uint64		written = pg_atomic_read_u64(&ring->written);
	uint64		claimed = Max(pg_atomic_read_u64(&ring->claimed), written);

	*end = written;
	*first = Min(written, claimed - Min(claimed, ring->capacity));
}

bool
pgs_ring_row_whole(PgsRing *ring, uint64 index)
{
	return (pg_atomic_read_u32(chunk_seq(ring, index % ring->capacity)) & 1) == 0;
}

/* The row at ring index index (it must be in the ring). */
const void *
pgs_ring_row(PgsRing *ring, uint64 index)
{
	return pgs_ring_rows(ring) + (index % ring->capacity) * ring->row_size;
}
