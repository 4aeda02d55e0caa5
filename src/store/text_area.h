/*-------------------------------------------------------------------------
 *
 * text_area.h
 *		The deduplicated text area: query texts, names and blocker lists
 *		stored once and referenced from ASH rows by position (text_area.c).
 *
 * The sampler is its only writer (a PgsTextBatch); readers copy one entry
 * at a time without the lock (a PgsTextReader).  The locking rules are
 * written once, at the top of shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_TEXT_AREA_H
#define PGS_TEXT_AREA_H

#include "port/atomics.h"

/*
 * A reference into the text area: 1 + the logical byte position of the
 * entry, or PGS_TEXT_NONE.  Logical positions only grow; the entry is still
 * stored while position >= the area's tail.
 */
typedef uint64 PgsTextRef;
#define PGS_TEXT_NONE			((PgsTextRef) 0)

/*
 * The text area's part of PgsSharedState: written under lock; head and
 * tail are atomics so that readers can copy the area without it (shmem.c).
 * visible_from is moved by pgsentinel_reset() (reset.c), under lock:
 * readers see no text before it.
 */
typedef struct PgsTextShared
{
	/* Layout, fixed at startup. */
	Size		size;
	Size		offset;			/* of its bytes, from pgs_state */

	pg_atomic_uint64 head;		/* logical position of the next entry */
	pg_atomic_uint64 tail;		/* oldest entry still stored */
	uint64		stored;			/* entries ever written */
	uint64		dropped;		/* evicted while a row in the ring used them */
	pg_atomic_uint64 visible_from;
} PgsTextShared;

/*
 * A reader of the text area (text_area.c): the last text it looked up, in
 * a buffer as large as the largest text it has looked up.
 */
typedef struct PgsTextReader
{
	MemoryContext cxt;
	char	   *buf;
	Size		buf_size;
	uint64		floor;			/* visible_from as of the reader's query */
} PgsTextReader;

/* text_area.c: writer side (the sampler only) */
typedef struct PgsTextBatch PgsTextBatch;
extern PgsTextBatch *pgs_text_batch_create(MemoryContext mcxt);
extern void pgs_text_batch_reset(PgsTextBatch *batch);
extern PgsTextRef pgs_text_batch_add(PgsTextBatch *batch, const char *data,
									 uint32 len, uint64 row_index);
extern bool pgs_text_batch_reuse(PgsTextBatch *batch, PgsTextRef ref,
								 const uint32 *len, uint64 row_index);
extern bool pgs_text_batch_reuse_same(PgsTextBatch *batch, PgsTextRef ref,
									  const char *data, uint32 len,
									  uint64 row_index);
extern void pgs_text_batch_publish(PgsTextBatch *batch);
extern bool pgs_text_batch_reset_missed(PgsTextBatch *batch);

/* text_area.c: reader side */
extern void pgs_text_reader_init(PgsTextReader *tr, MemoryContext cxt,
								 uint64 floor);
extern bool pgs_text_lookup(PgsTextReader *tr, PgsTextRef ref,
							const char **data, uint32 *len);
extern uint64 pgs_text_visible_tail(void);

/* text_area.c: saving and restoring the area (persist.c) */
extern bool pgs_text_next_entry(uint64 *pos, uint64 head, const char **data,
								uint32 *len);
extern Size pgs_text_entry_size(uint32 len);
extern PgsTextRef pgs_text_restore(const char *data, uint32 len);
extern void pgs_text_restore_use(PgsTextRef ref, uint64 row_index);

#endif							/* PGS_TEXT_AREA_H */
