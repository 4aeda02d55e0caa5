/*-------------------------------------------------------------------------
 *
 * ring.h
 *		Rings of fixed-size rows with one writer, and the readers that
 *		stream them without a lock (ring.c).
 *
 * The ASH ring and the ring of samples (sample/sampler.h) and the
 * statements ring (statements/pgssh.h) are each a PgsRing inside
 * PgsSharedState; their rows lie in the same allocation.  The locking
 * rules are written once, at the top of shmem.c; the readers' protocol at
 * the top of ring.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_RING_H
#define PGS_RING_H

#include "port/atomics.h"

/*
 * A ring of fixed-size rows with one writer; readers copy it without a
 * lock (ring.c).  Layout fields are set once at startup.
 */
typedef struct PgsRing
{
	uint64		capacity;		/* rows */
	Size		row_size;
	uint32		chunk_rows;		/* rows per sequence counter */
	Size		rows_offset;	/* from pgs_state */
	Size		seqs_offset;	/* pg_atomic_uint32 per chunk */
	pg_atomic_uint64 written;	/* rows ever appended; next goes at % capacity */
	pg_atomic_uint64 claimed;	/* rows appended or being appended */
	pg_atomic_uint64 visible_from;	/* first row readers see (reset.c) */
} PgsRing;

/*
 * What one query reads of a ring (ring.c, pgs_ring_query_bounds): its rows,
 * and the reset state when it fixed them, so that every scan of the query
 * sees the same texts and readings whatever a reset does meanwhile.
 */
typedef struct PgsQueryBounds
{
	uint64		first;			/* rows [first, end) */
	uint64		end;
	uint64		text_floor;		/* the text area's visible_from */
	int64		reset_sample_id;
} PgsQueryBounds;

/*
 * A reader of a ring (ring.c): rows [first, end), fetched a chunk at a
 * time into a buffer of one chunk.
 */
typedef struct PgsRingCursor
{
	PgsRing    *ring;
	uint64		first;
	uint64		end;
	uint64		next;			/* ring index of the next row to fetch */
	char	   *chunk;			/* rows fetched, chunk_rows of them at most */
	uint32		chunk_len;		/* rows fetched */
	uint32		chunk_pos;		/* next of them to return */
	bool		chunk_copied;	/* false: only counted (pgs_ring_cursor_skip) */
	bool		started;		/* a row was returned or skipped */
	uint64		lost;			/* rows overwritten before they were read,
								 * after the first (see ring.c) */
} PgsRingCursor;

/* ring.c */
extern Size pgs_ring_size(Size row_size, uint64 capacity);
extern Size pgs_ring_init(PgsRing *ring, Size row_size, uint64 capacity,
						  Size offset);
extern char *pgs_ring_rows(const PgsRing *ring);
extern uint64 pgs_ring_written(PgsRing *ring);
extern void pgs_ring_append(PgsRing *ring, const void *rows, uint64 n);
extern void *pgs_ring_begin_update(PgsRing *ring, uint64 row_index);
extern void pgs_ring_end_update(PgsRing *ring, uint64 row_index);
extern void pgs_ring_hide_before(PgsRing *ring, uint64 index);
extern uint64 pgs_ring_visible_rows(PgsRing *ring);
extern void pgs_ring_query_bounds(PgsRing *ring, MemoryContext query_cxt,
								  PgsQueryBounds *bounds);
extern void pgs_ring_cursor_open(PgsRingCursor *c, PgsRing *ring,
								 uint64 first, uint64 end);
extern const void *pgs_ring_cursor_next(PgsRingCursor *c);
extern bool pgs_ring_cursor_skip(PgsRingCursor *c);
extern void pgs_ring_cursor_rewind(PgsRingCursor *c);
extern void pgs_ring_whole_range(PgsRing *ring, uint64 *first, uint64 *end);
extern bool pgs_ring_row_whole(PgsRing *ring, uint64 index);
extern const void *pgs_ring_row(PgsRing *ring, uint64 index);

#endif							/* PGS_RING_H */
