/*-------------------------------------------------------------------------
 *
 * text_area.c
 *		The deduplicated text area: query texts, names and blocker lists
 *		stored once and referenced from ASH rows by position.
 *
 * The area is a circular byte buffer addressed by logical positions that
 * only grow.  An entry is a PgsTextEntry header followed by its bytes,
 * padded to 8.  An entry never wraps: when it does not fit before the end
 * of the buffer the rest of the lap is skipped (marked by a PGS_TEXT_PAD
 * header, or implicitly when not even a header fits).  Entries older than
 * the area's tail have been overwritten; a row that refers to one shows
 * NULL.
 *
 * Writer side: the sampler is the only writer, so it knows the head and
 * tail without looking them up and can prepare a whole sample's texts, at
 * their final positions, in a private staging buffer (a PgsTextBatch).
 * pgs_text_batch_publish() then copies the staging bytes in; it runs with
 * pgs_state->lock held exclusively (see shmem.c).  Deduplication uses a
 * small direct-mapped cache private to the sampler: a hit is verified
 * byte for byte, and an entry older than half a lap is stored again rather
 * than reused, so recent rows do not lose their text when the old copy is
 * overwritten.
 *
 * Reader side: pgs_text_lookup() copies the one entry a reference names
 * out of the shared area, without the lock, and validates the copy (see
 * the rules in shmem.c): a reader's memory is the largest text it read,
 * whatever the size of the area.
 *
 * pgsentinel_reset() (reset.c) moves the area's visible_from to the head:
 * readers show no text before it, and the sampler stops using the entries
 * before it for new rows.  A sample the sampler prepared before a reset may
 * refer to such entries: pgs_text_batch_reset_missed() tells it to hide
 * that sample.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"

#include "pgsentinel.h"
#include "store/text_area.h"

/* Text area entry header; the bytes follow, the whole padded to 8. */
typedef struct PgsTextEntry
{
	uint32		len;			/* PGS_TEXT_PAD: skip to the next lap */
	uint32		hash;
	uint64		last_row;		/* newest ASH row index using it */
} PgsTextEntry;
#define PGS_TEXT_PAD			((uint32) 0xFFFFFFFF)

#define ENTRY_SIZE(len)		TYPEALIGN(8, sizeof(PgsTextEntry) + (len))

typedef struct DedupSlot
{
	uint32		hash;
	uint32		len;
	uint64		pos;			/* logical position of the entry */
} DedupSlot;

typedef struct TouchedEntry
{
	uint64		pos;
	uint64		row_index;
} TouchedEntry;

/*
 * Which shared entries this batch has touched already, so that an entry
 * that many rows of a sample use (an application name, a statement run by
 * many sessions) is stamped once: direct-mapped by position, a slot
 * belongs to the current batch when its generation is the batch's.
 */
#define TOUCH_CACHE_SIZE	256

typedef struct TouchSlot
{
	uint64		pos;
	uint32		generation;
	int			touched;		/* index in the batch's touched[] */
} TouchSlot;

struct PgsTextBatch
{
	MemoryContext mcxt;
	Size		size;			/* bytes in the shared area */
	uint64		start_head;		/* shared head when the batch began */
	uint64		head;			/* head after this batch */
	uint64		tail;			/* tail after this batch */
	uint64		floor;			/* visible_from when the batch began */
	uint64		resets;			/* pgs_state->reset.count then */
	uint64		dropped;		/* texts of live rows evicted, or refused */
	uint64		stored;			/* entries this batch adds */
	char	   *staging;		/* bytes of [start_head, head) */
	Size		staging_cap;
	TouchedEntry *touched;		/* reused shared entries to stamp */
	int			ntouched;
	int			touched_cap;
	TouchSlot	touch_cache[TOUCH_CACHE_SIZE];
	uint32		generation;		/* of this batch, for touch_cache */
	DedupSlot  *cache;
	int			cache_size;
};

/*
 * Create the sampler's batch, starting from the area's current head and
 * tail.  Called once, by the sampler, at startup.
 */
PgsTextBatch *
pgs_text_batch_create(MemoryContext mcxt)
{
	PgsTextBatch *b = MemoryContextAllocZero(mcxt, sizeof(PgsTextBatch));

	b->mcxt = mcxt;
	b->size = pgs_state->text.size;
	/* only this process moves them (see shmem.c) */
	b->start_head = b->head = pg_atomic_read_u64(&pgs_state->text.head);
	b->tail = pg_atomic_read_u64(&pgs_state->text.tail);
	b->resets = pg_atomic_read_u64(&pgs_state->reset.count);
	pg_read_barrier();
	b->floor = pg_atomic_read_u64(&pgs_state->text.visible_from);
	b->staging_cap = 64 * 1024;
	b->staging = MemoryContextAlloc(mcxt, b->staging_cap);
	b->touched_cap = 256;
	b->touched = MemoryContextAlloc(mcxt, b->touched_cap * sizeof(TouchedEntry));
	b->cache_size = Max(1024, (int) (b->size / 256));
	b->cache = MemoryContextAllocZero(mcxt, b->cache_size * sizeof(DedupSlot));
	return b;
}

/* Start a new sample's batch where the previous one ended. */
void
pgs_text_batch_reset(PgsTextBatch *b)
{
	b->start_head = b->head;
	/* resets first: a reset moves visible_from, then counts itself */
	b->resets = pg_atomic_read_u64(&pgs_state->reset.count);
	pg_read_barrier();
	b->floor = pg_atomic_read_u64(&pgs_state->text.visible_from);
	b->dropped = 0;
	b->stored = 0;
	b->ntouched = 0;
	if (++b->generation == 0)
	{
		memset(b->touch_cache, 0, sizeof(b->touch_cache));
		b->generation = 1;
	}
}

/*
 * Header of the entry at a logical position, wherever it currently is: in
 * this batch's staging buffer or in the shared area (which only this
 * process writes, so it may read it without the lock).
 */
static PgsTextEntry *
entry_at(PgsTextBatch *b, uint64 pos)
{
	if (pos >= b->start_head)
		return (PgsTextEntry *) (b->staging + (pos - b->start_head));
	return (PgsTextEntry *) (pgs_text_area() + pos % b->size);
}

/* True if no entry header fits between pos and the end of its lap. */
static inline bool
lap_tail_too_short(Size size, uint64 pos)
{
	return size - pos % size < sizeof(PgsTextEntry);
}

/* Make room in the staging buffer for bytes up to logical position end. */
static void
staging_reserve(PgsTextBatch *b, uint64 end)
{
	Size		need = end - b->start_head;

	if (need > b->staging_cap)
	{
		Size		newcap = b->staging_cap;

		while (newcap < need)
			newcap *= 2;
		b->staging = repalloc(b->staging, newcap);
		b->staging_cap = newcap;
	}
}

/*
 * Advance the tail past old entries until [tail, end) fits in the area,
 * counting the entries some row still in the ring refers to.
 */
static bool
evict_until_fits(PgsTextBatch *b, uint64 end, uint64 oldest_live_row)
{
	while (end - b->tail > b->size)
	{
		PgsTextEntry *e;

		if (b->tail >= b->start_head)
			return false;		/* would evict this batch's own texts */
		if (lap_tail_too_short(b->size, b->tail))
		{
			b->tail += b->size - b->tail % b->size;
			continue;
		}
		e = entry_at(b, b->tail);
		if (e->len == PGS_TEXT_PAD)
		{
			b->tail += b->size - b->tail % b->size;
			continue;
		}
		if (e->last_row >= oldest_live_row)
			b->dropped++;
		b->tail += ENTRY_SIZE(e->len);
	}
	return true;
}

/*
 * Is the entry at pos recent enough to be used by a new row?  Entries in
 * the older half of the area are stored again instead, so that a text in
 * use does not get evicted soon after its row was written; and so are
 * entries that readers no longer show since a reset.
 */
static inline bool
recent(PgsTextBatch *b, uint64 pos)
{
	return pos >= b->tail && pos >= b->floor && pos + b->size / 2 >= b->head;
}

/*
 * Record that the row at row_index uses the entry at pos: in the entry
 * itself if this batch stores it, else in the list of shared entries to
 * stamp when the batch is published (the shared entry is not read here).
 * Rows do not come in row order (a sample's lock waiters come by lock).
 */
static void
stamp(PgsTextBatch *b, uint64 pos, uint64 row_index)
{
	TouchSlot  *slot;

	if (pos >= b->start_head)
	{
		PgsTextEntry *e = entry_at(b, pos);

		if (e->last_row < row_index)
			e->last_row = row_index;
		return;
	}
	slot = &b->touch_cache[(pos / 8) % TOUCH_CACHE_SIZE];
	if (slot->generation == b->generation && slot->pos == pos)
	{
		TouchedEntry *t = &b->touched[slot->touched];

		if (t->row_index < row_index)
			t->row_index = row_index;
		return;
	}
	slot->generation = b->generation;
	slot->pos = pos;
	slot->touched = b->ntouched;
	if (b->ntouched == b->touched_cap)
	{
		b->touched_cap *= 2;
		b->touched = repalloc(b->touched, b->touched_cap * sizeof(TouchedEntry));
	}
	b->touched[b->ntouched].pos = pos;
	b->touched[b->ntouched].row_index = row_index;
	b->ntouched++;
}

/*
 * If the entry at pos is recent and holds exactly these bytes, record that
 * the row at row_index uses it and return true.
 */
static bool
entry_holds(PgsTextBatch *b, uint64 pos, const char *data, uint32 len,
			uint64 row_index)
{
	PgsTextEntry *e;

	if (!recent(b, pos))
		return false;
	e = entry_at(b, pos);
	if (e->len != len || memcmp((char *) e + sizeof(PgsTextEntry), data, len) != 0)
		return false;
	stamp(b, pos, row_index);
	return true;
}

/*
 * Use again, for the row at row_index, a reference this batch returned for
 * a text of length *len at an earlier sample, if it is still recent: the
 * caller knows the text is the same (same session, same statement), so
 * nothing is hashed or compared, and the entry, which only this process
 * writes and which is not evicted while recent, is not even read.  False
 * if it has to be added anew.  *len is read by assertions only (the
 * sampler keeps it apart from what every row reads).
 */
bool
pgs_text_batch_reuse(PgsTextBatch *b, PgsTextRef ref, const uint32 *len,
					 uint64 row_index)
{
	if (ref == PGS_TEXT_NONE || !recent(b, ref - 1))
		return false;
	Assert(entry_at(b, ref - 1)->len == *len);
	stamp(b, ref - 1, row_index);
	return true;
}

/*
 * The same for a reference whose text may have changed: used again only if
 * it still holds these bytes.  This spares hashing and the lookup in the
 * deduplication cache (a cache miss per text) for a text that is usually
 * the same as at the previous sample.
 */
bool
pgs_text_batch_reuse_same(PgsTextBatch *b, PgsTextRef ref, const char *data,
						  uint32 len, uint64 row_index)
{
	return ref != PGS_TEXT_NONE && entry_holds(b, ref - 1, data, len, row_index);
}

/*
 * Return a reference to this text for the ASH row at row_index, storing it
 * in the batch unless a recent identical copy is stored already.  Returns
 * PGS_TEXT_NONE when the text cannot be kept (larger than a quarter of the
 * area, or this sample alone would fill half of it); that counts as a
 * dropped text, which pgsentinel_status() reports.
 */
PgsTextRef
pgs_text_batch_add(PgsTextBatch *b, const char *data, uint32 len,
				   uint64 row_index)
{
	uint32		hash = hash_bytes((const unsigned char *) data, len);
	DedupSlot  *slot = &b->cache[hash % b->cache_size];
	uint64		pos;
	uint64		end;
	Size		esize = ENTRY_SIZE(len);
	uint64		oldest_live_row;
	PgsTextEntry *e;

	/* A recent identical entry? */
	if (slot->hash == hash && slot->len == len &&
		entry_holds(b, slot->pos, data, len, row_index))
		return slot->pos + 1;

	/* too big to keep, or this sample would fill half the area: counted */
	if (esize > b->size / 4)
	{
		b->dropped++;
		return PGS_TEXT_NONE;
	}

	/* Skip the rest of the lap if the entry does not fit before its end. */
	pos = b->head;
	if (b->size - pos % b->size < esize)
		pos += b->size - pos % b->size;
	end = pos + esize;
	if (end - b->start_head > b->size / 2)
	{
		b->dropped++;
		return PGS_TEXT_NONE;
	}

	oldest_live_row = row_index >= pgs_state->sampler.ash.capacity ?
		row_index - pgs_state->sampler.ash.capacity + 1 : 0;
	/* rows hidden by a reset no longer count (a stale value only miscounts) */
	oldest_live_row =
		Max(oldest_live_row,
			pg_atomic_read_u64(&pgs_state->sampler.ash.visible_from));
	if (!evict_until_fits(b, end, oldest_live_row))
	{
		b->dropped++;
		return PGS_TEXT_NONE;
	}

	staging_reserve(b, end);
	if (pos != b->head && !lap_tail_too_short(b->size, b->head))
	{
		e = entry_at(b, b->head);
		e->len = PGS_TEXT_PAD;
		e->hash = 0;
		e->last_row = 0;
	}
	e = entry_at(b, pos);
	e->len = len;
	e->hash = hash;
	e->last_row = row_index;
	memcpy((char *) e + sizeof(PgsTextEntry), data, len);
	b->head = end;
	b->stored++;

	slot->hash = hash;
	slot->len = len;
	slot->pos = pos;
	return pos + 1;
}

/*
 * Copy the batch into the shared area and move its head and tail.  The
 * caller holds pgs_state->lock exclusively; this only copies and stores.
 * Readers copy the area without the lock (shmem.c): the tail passes what
 * will be overwritten before any byte is, and the head passes the new
 * entries only once they are complete.  Stamps change only last_row,
 * which readers do not use.
 */
void
pgs_text_batch_publish(PgsTextBatch *b)
{
	char	   *area = pgs_text_area();
	uint64		pos = b->start_head;
	int			i;

	pg_atomic_write_u64(&pgs_state->text.tail, b->tail);
	pg_write_barrier();
	while (pos < b->head)
	{
		Size		phys = pos % b->size;
		Size		n = Min(b->head - pos, b->size - phys);

		memcpy(area + phys, b->staging + (pos - b->start_head), n);
		pos += n;
	}
	for (i = 0; i < b->ntouched; i++)
	{
		PgsTextEntry *e = (PgsTextEntry *) (area + b->touched[i].pos % b->size);

		if (e->last_row < b->touched[i].row_index)
			e->last_row = b->touched[i].row_index;
	}
	pg_write_barrier();
	pg_atomic_write_u64(&pgs_state->text.head, b->head);
	pgs_state->text.stored += b->stored;
	pgs_state->text.dropped += b->dropped;
}

/*
 * Has pgsentinel_reset() run since this batch began?  Then the batch may
 * use entries readers no longer show.  Called with pgs_state->lock held.
 */
bool
pgs_text_batch_reset_missed(PgsTextBatch *b)
{
	return pg_atomic_read_u64(&pgs_state->reset.count) != b->resets;
}

/*
 * Set up a reader; its buffer will be allocated in cxt.  floor: the text
 * floor of its query's bounds (PgsQueryBounds), below which texts are
 * hidden by a reset.
 */
void
pgs_text_reader_init(PgsTextReader *tr, MemoryContext cxt, uint64 floor)
{
	tr->cxt = cxt;
	tr->buf = NULL;
	tr->buf_size = 0;
	tr->floor = floor;
}

/* The oldest logical position whose entries readers may show. */
uint64
pgs_text_visible_tail(void)
{
	return Max(pg_atomic_read_u64(&pgs_state->text.tail),
			   pg_atomic_read_u64(&pgs_state->text.visible_from));
}

/*
 * Resolve a reference: copy its entry out of the shared area into the
 * reader's buffer, without the lock.  False when there is no text, it has
 * been overwritten since the row was written (or while it was copied), or
 * a reset hid it.  *data stays valid until the next lookup.
 *
 * The protocol of text_area's writer (shmem.c): it moves the tail past
 * what it will overwrite before writing a byte, and the head past new
 * entries after their last byte.  So an entry read after the head was
 * seen past it is complete, and a copy that the tail, read after the
 * copy, has not passed is untorn.  The header is validated that way
 * before its length is trusted, then the text.
 */
bool
pgs_text_lookup(PgsTextReader *tr, PgsTextRef ref, const char **data,
				uint32 *len)
{
	Size		size = pgs_state->text.size;
	const char *area = pgs_text_area();
	uint64		pos;
	uint64		head;
	PgsTextEntry e;

	if (ref == PGS_TEXT_NONE)
		return false;
	pos = ref - 1;
	head = pg_atomic_read_u64(&pgs_state->text.head);
	pg_read_barrier();
	if (pos < Max(pg_atomic_read_u64(&pgs_state->text.tail), tr->floor) ||
		pos + sizeof(PgsTextEntry) > head ||
		pos % size + sizeof(PgsTextEntry) > size)
		return false;
	memcpy(&e, area + pos % size, sizeof(PgsTextEntry));
	pg_read_barrier();
	if (pos < pg_atomic_read_u64(&pgs_state->text.tail))
		return false;
	if (e.len == PGS_TEXT_PAD || e.len > size / 4 ||
		pos + ENTRY_SIZE(e.len) > head ||
		pos % size + ENTRY_SIZE(e.len) > size)
		return false;
	/* an empty text too gets a buffer: memcpy() wants one, the caller data */
	if (e.len > tr->buf_size || tr->buf == NULL)
	{
		Size		want = Max(Max(tr->buf_size * 2, 1024), (Size) e.len);

		if (tr->buf != NULL)
			pfree(tr->buf);
		tr->buf = MemoryContextAlloc(tr->cxt, want);
		tr->buf_size = want;
	}
	memcpy(tr->buf, area + pos % size + sizeof(PgsTextEntry), e.len);
	pg_read_barrier();
	if (pos < pg_atomic_read_u64(&pgs_state->text.tail))
		return false;
	*data = tr->buf;
	*len = e.len;
	return true;
}

/*
 * Saving and restoring the area (persist.c), when no other process runs.
 *
 * The entry at or after *pos, before head: sets its bytes and moves *pos
 * past it; false when there is none.  Walks from the tail, whose entries
 * are whole up to the head even if the sampler was killed while it
 * published (the tail passes what it overwrites first, the head passes
 * new entries last); stops at anything that does not look like an entry.
 */
bool
pgs_text_next_entry(uint64 *pos, uint64 head, const char **data, uint32 *len)
{
	Size		size = pgs_state->text.size;

	while (*pos < head)
	{
		PgsTextEntry *e;

		if (lap_tail_too_short(size, *pos))
		{
			*pos += size - *pos % size;
			continue;
		}
		e = (PgsTextEntry *) (pgs_text_area() + *pos % size);
		if (e->len == PGS_TEXT_PAD)
		{
			*pos += size - *pos % size;
			continue;
		}
		if (e->len > size / 4 || *pos + ENTRY_SIZE(e->len) > head ||
			*pos % size + ENTRY_SIZE(e->len) > size)
			return false;
		*data = (const char *) e + sizeof(PgsTextEntry);
		*len = e->len;
		*pos += ENTRY_SIZE(e->len);
		return true;
	}
	return false;
}

/* Bytes an entry of len bytes of text takes in the area. */
Size
pgs_text_entry_size(uint32 len)
{
	return ENTRY_SIZE(len);
}

/*
 * Store a text at the head of the area while the history is restored at
 * startup: the area is empty then, and restored texts only fill its first
 * lap.  Returns the reference, or PGS_TEXT_NONE if it does not fit.
 */
PgsTextRef
pgs_text_restore(const char *data, uint32 len)
{
	Size		size = pgs_state->text.size;
	uint64		head = pg_atomic_read_u64(&pgs_state->text.head);
	PgsTextEntry *e;

	if (len > size / 4 || head + ENTRY_SIZE(len) > size)
		return PGS_TEXT_NONE;
	e = (PgsTextEntry *) (pgs_text_area() + head);
	e->len = len;
	e->hash = hash_bytes((const unsigned char *) data, len);
	e->last_row = 0;
	memcpy((char *) e + sizeof(PgsTextEntry), data, len);
	pg_atomic_write_u64(&pgs_state->text.head, head + ENTRY_SIZE(len));
	pgs_state->text.stored++;
	return head + 1;
}

/* A restored row, at ring index row_index, uses the restored entry ref. */
void
pgs_text_restore_use(PgsTextRef ref, uint64 row_index)
{
	PgsTextEntry *e = (PgsTextEntry *) (pgs_text_area() +
										(ref - 1) % pgs_state->text.size);

	if (e->last_row < row_index)
		e->last_row = row_index;
}
