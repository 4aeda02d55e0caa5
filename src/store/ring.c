/*-------------------------------------------------------------------------
 *
 * ring.c
 *		Rings of fixed-size rows with one writer and readers that stream
 *		them, a chunk at a time, without taking any lock.
 *
 * The ASH ring and the statements ring are each written by one process
 * (the sampler, the statements worker).  A reader takes no lock: one
 * descheduled while holding a lock would keep the writer waiting for a
 * scheduler time slice.  It copies, then checks that what it copied was not
 * being written meanwhile, the protocol of a sequence lock, so the writer
 * never waits for a reader.
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
 * Reader (PgsRingCursor): a query reads the rows [first, end) fixed when
 * it first reads the ring (pgs_ring_query_bounds: end is written as read
 * then, first the oldest row then in the ring and visible), and every scan
 * of the ring in that query reads the same bounds, a chunk at a time, into
 * a buffer of one chunk: a reader's memory does not grow with the ring
 * (8.8 GB at the largest max_entries; copying it whole for each query let
 * a few readers with PUBLIC rights exhaust the server's memory).  A chunk
 * whose counter was odd, or changed while it was copied, is copied again.
 * A consistent copy may still hold rows newer than the query's, written
 * after the query fixed its bounds (the ring wrapped meanwhile): after
 * each copy the reader reads claimed, and the rows older than claimed -
 * capacity are skipped.  Those skipped before the scan returned its first
 * row only move its start, as if the query had begun a moment later (with
 * a full ring the oldest rows are the next to go, and a scan starts with
 * them); those skipped after are a gap in what the query reads, counted in
 * the cursor's lost rows (the views report them in a NOTICE).  If the copy of a chunk holds any byte of an
 * append, the reader saw that chunk's counter after the append's second
 * increment, so (a read barrier between) it sees the append's claimed or a
 * later one.  A query therefore reads only untorn rows of its bounds, in
 * order, some of the oldest possibly skipped when the writer laps a long
 * scan; a row changed in place between two scans of one query shows the
 * change in the later scan only.  A scan that reads no column (count(*):
 * pgs_ring_cursor_skip) copies nothing: it only reads claimed once per
 * chunk to leave out the rows overwritten by then.
 *
 * The alternative, spilling one consistent copy of the rows to a temporary
 * file, would keep every scan of a query identical even when lapped, but
 * writes the whole ring to disk for every query (a count(*) of 100000
 * rows would write 17 MB) where streaming copies 64 kB at a time through
 * the processor's cache; a lapped scan needs a long query over a ring
 * that turns over in minutes, and is reported.
 *
 * Visible rows: pgsentinel_reset() moves visible_from, the first row
 * readers see, to written, under the lock (no append is in progress then);
 * a writer that hides rows it appends stores visible_from before its
 * append, so a reader that sees the append's written sees it too.
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
#include "store/ring.h"

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
	pg_atomic_init_u64(&ring->visible_from, 0);

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
 * Hide the rows before ring index index from readers (reset.c).  Only a
 * holder of pgs_state->lock in exclusive mode calls this, before any
 * append of the rows it does not hide.
 */
void
pgs_ring_hide_before(PgsRing *ring, uint64 index)
{
	Assert(LWLockHeldByMeInMode(pgs_state->lock, LW_EXCLUSIVE));
	pg_atomic_write_u64(&ring->visible_from, index);
	pg_memory_barrier();
}

/* The rows a reader starting now would read: [*first, *end). */
static void
ring_bounds(PgsRing *ring, uint64 *first, uint64 *end)
{
	uint64		written = pg_atomic_read_u64(&ring->written);
	uint64		from;

	pg_read_barrier();
	from = pg_atomic_read_u64(&ring->visible_from);
	*end = written;
	*first = Min(written, Max(from, written - Min(written, ring->capacity)));
}

/* How many rows a reader starting now would read. */
uint64
pgs_ring_visible_rows(PgsRing *ring)
{
	uint64		first;
	uint64		end;

	ring_bounds(ring, &first, &end);
	return end - first;
}

/*
 * One set of bounds per ring and query.  Every scan of the history within
 * a query (a self-join, or "WHERE sample_id = (SELECT max(sample_id) FROM
 * pg_active_session_history)") reads the same rows, as it would a table;
 * otherwise a sample taken between two scans makes them disagree.  The
 * bounds live in the query's memory and are forgotten when that memory is
 * reset or deleted, so a new query (also inside a PL/pgSQL loop) reads the
 * ring's bounds again.  Queries nest (a function called by a query may
 * read the history in a query of its own), so each query's bounds are
 * remembered separately, in a list whose entries live in, and are unlinked
 * with, the memory of their query.
 */
typedef struct QueryBounds
{
	MemoryContext query_cxt;
	PgsRing    *ring;
	PgsQueryBounds bounds;
	MemoryContextCallback forget;
	struct QueryBounds *next;
} QueryBounds;

static QueryBounds *query_bounds = NULL;

static void
forget_query_bounds(void *arg)
{
	QueryBounds **link;

	for (link = &query_bounds; *link != NULL; link = &(*link)->next)
	{
		if (*link == (QueryBounds *) arg)
		{
			*link = (*link)->next;
			break;
		}
	}
}

/*
 * What the query whose memory is query_cxt reads of ring: fixed by its
 * first call for that query.  A reset (reset.c) stores the rings' visible
 * starts, then the text floor, with barriers between: the text floor is
 * read before the bounds, so that rows of the bounds never lose their
 * texts to a reset, and reset_sample_id after them, so that bounds from
 * after a reset come with its sample id.
 */
void
pgs_ring_query_bounds(PgsRing *ring, MemoryContext query_cxt,
					  PgsQueryBounds *bounds)
{
	QueryBounds *qb;

	for (qb = query_bounds; qb != NULL; qb = qb->next)
	{
		if (qb->query_cxt == query_cxt && qb->ring == ring)
			break;
	}
	if (qb == NULL)
	{
		qb = MemoryContextAllocZero(query_cxt, sizeof(QueryBounds));
		qb->query_cxt = query_cxt;
		qb->ring = ring;
		qb->bounds.text_floor =
			pg_atomic_read_u64(&pgs_state->text.visible_from);
		pg_read_barrier();
		ring_bounds(ring, &qb->bounds.first, &qb->bounds.end);
		pg_read_barrier();
		qb->bounds.reset_sample_id =
			(int64) pg_atomic_read_u64(&pgs_state->reset.sample_id);
		qb->forget.func = forget_query_bounds;
		qb->forget.arg = qb;
		MemoryContextRegisterResetCallback(query_cxt, &qb->forget);
		qb->next = query_bounds;
		query_bounds = qb;
	}
	*bounds = qb->bounds;
}

/*
 * Start reading rows [first, end) of ring, oldest first.  The buffer of one
 * chunk is allocated in the current memory context.
 */
void
pgs_ring_cursor_open(PgsRingCursor *c, PgsRing *ring, uint64 first,
					 uint64 end)
{
	memset(c, 0, sizeof(PgsRingCursor));
	c->ring = ring;
	c->first = first;
	c->end = end;
	c->next = first;
	c->chunk = palloc((Size) ring->chunk_rows * ring->row_size);
}

/*
 * Fetch the next rows, up to the end of their chunk: copy them when copy
 * is set, else only count them.  Rows the writer overwrote before they
 * were fetched are skipped and counted as lost.  False when no row is
 * left.
 */
static bool
cursor_fetch(PgsRingCursor *c, bool copy)
{
	PgsRing    *ring = c->ring;

	for (;;)
	{
		uint64		at;
		uint64		chunk_end;
		uint64		count;
		uint64		claimed;
		uint64		oldest;

		if (c->next >= c->end)
		{
			c->chunk_len = c->chunk_pos = 0;
			return false;
		}
		at = c->next % ring->capacity;
		chunk_end = (at / ring->chunk_rows + 1) * ring->chunk_rows;
		count = Min(c->end - c->next, Min(chunk_end, ring->capacity) - at);
		if (copy)
			copy_chunk(ring, at, count, c->chunk);

		/* rows older than this were (or are being) overwritten */
		pg_read_barrier();
		claimed = pg_atomic_read_u64(&ring->claimed);
		oldest = claimed - Min(claimed, ring->capacity);
		if (oldest < c->next + count)
		{
			c->chunk_pos = (uint32) (Max(oldest, c->next) - c->next);
			c->chunk_len = (uint32) count;
			c->chunk_copied = copy;
			if (c->started)
				c->lost += c->chunk_pos;
			c->next += count;
			return true;
		}
		/* the writer lapped this reader: on to the oldest row left */
		if (c->started)
			c->lost += Min(oldest, c->end) - c->next;
		c->next = Min(oldest, c->end);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The next row, oldest first, or NULL after the last.  The row is valid
 * until the next call.
 */
const void *
pgs_ring_cursor_next(PgsRingCursor *c)
{
	if (c->chunk_pos >= c->chunk_len || !c->chunk_copied)
	{
		/* rows only counted so far: copy them from the next one on */
		c->next -= c->chunk_len - c->chunk_pos;
		if (!cursor_fetch(c, true))
			return NULL;
	}
	c->started = true;
	return c->chunk + (Size) c->chunk_pos++ * c->ring->row_size;
}

/* Move past the next row without copying it; false after the last. */
bool
pgs_ring_cursor_skip(PgsRingCursor *c)
{
	if (c->chunk_pos >= c->chunk_len && !cursor_fetch(c, false))
		return false;
	c->started = true;
	c->chunk_pos++;
	return true;
}

/* Read again from the first row (the rows lost so far stay counted). */
void
pgs_ring_cursor_rewind(PgsRingCursor *c)
{
	c->next = c->first;
	c->chunk_len = c->chunk_pos = 0;
	c->started = false;			/* each scan counts its own gap */
}

/*
 * Saving and restoring a ring (persist.c), when no writer runs: the
 * postmaster at shutdown, after every other process has exited, and at
 * startup, before any exists.
 *
 * The rows of ring indexes [*first, *end) that are whole and visible.  A writer killed
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
	uint64		from = pg_atomic_read_u64(&ring->visible_from);

	*end = written;
	*first = Min(written, Max(from, claimed - Min(claimed, ring->capacity)));
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
