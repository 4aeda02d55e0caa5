/*-------------------------------------------------------------------------
 *
 * persist.c
 *		The history kept across restarts: the rings, and the texts their
 *		rows use, written to a file at a clean shutdown and read back at
 *		the next start.
 *
 * As pg_stat_statements does with its statistics, the postmaster writes the
 * file when it exits normally -- after every other process has exited, so
 * nothing changes while it is written -- and reads it when it creates
 * shared memory, before any other process exists.  An immediate shutdown
 * is a normal exit of the postmaster too, after it killed the workers
 * wherever they were: only the rows and texts that are whole are written
 * (pgs_ring_whole_range(), pgs_text_next_entry()).  The file is removed
 * once read: a base backup or a copy of the data directory taken while the
 * server runs never carries it into another server, and after a crash
 * (shared memory may be corrupt: the postmaster then writes nothing) the
 * history starts empty rather than from an older restart's.  With
 * pgsentinel.save_history off nothing is written (the file holds query
 * texts).
 *
 * The file: a header (format, PostgreSQL major version, row sizes, counts,
 * the last sample id, the history id), the texts of the text area oldest
 * first, each with the logical position it had, the ASH rows oldest first,
 * the samples oldest first, the statements rows oldest first, and a
 * CRC-32C of all of that.  It is checked whole
 * before anything is restored; a file that does not match (another format
 * or major version, short, corrupt) is logged and ignored, so the server
 * always starts.  Settings may have changed in between: the newest rows
 * that fit each ring are kept, and the newest texts that fit the text area
 * (in its first lap).  What pgsentinel_reset() hid from readers is not
 * written (pgs_ring_whole_range(), pgs_text_visible_tail()); the reset
 * itself is not remembered.  Restored rows take ring indexes from 0, restored
 * texts positions from 0; the rows' references are mapped from the old
 * positions, and a reference to a text not restored becomes none (the
 * column shows NULL, as for a text dropped while the server ran).  Sample
 * ids go on from the last one saved.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "guc.h"
#include "pgsentinel.h"
#include "statements/pgssh.h"
#include "store/ash_rows.h"
#include "store/persist.h"
#include "store/ring.h"
#include "store/text_area.h"

#define HISTORY_FILE		PGSTAT_STAT_PERMANENT_DIRECTORY "/pgsentinel_history.stat"
#define HISTORY_FILE_TMP	HISTORY_FILE ".tmp"
#define HISTORY_MAGIC		0x48534750	/* "PGSH" */
#define HISTORY_FORMAT		2

/* Rows read and restored at a time. */
#define RESTORE_BATCH_ROWS	1024

typedef struct HistoryHeader
{
	uint32		magic;
	uint32		format;
	uint32		pg_major;		/* PG_VERSION_NUM / 100: wait event codes */
	uint32		ash_row_size;
	uint32		pgssh_row_size;
	uint32		sample_row_size;
	int64		last_sample_id;
	uint64		history_id;
	uint64		ntexts;
	uint64		nash;
	uint64		nsamples;
	uint64		npgssh;
} HistoryHeader;

/* Before the bytes of each text. */
typedef struct HistoryText
{
	uint64		pos;			/* its logical position in the saved area */
	uint32		len;
	uint32		padding;
} HistoryText;

/* The file being written or read, and the CRC of its bytes so far. */
typedef struct HistoryFile
{
	FILE	   *f;
	pg_crc32c	crc;
	bool		failed;
} HistoryFile;

static void
put_bytes(HistoryFile *hf, const void *data, Size len)
{
	if (hf->failed || len == 0)
		return;
	COMP_CRC32C(hf->crc, data, len);
	if (fwrite(data, 1, len, hf->f) != len)
		hf->failed = true;
}

static bool
get_bytes(HistoryFile *hf, void *data, Size len)
{
	if (hf->failed)
		return false;
	if (len > 0 && fread(data, 1, len, hf->f) != len)
	{
		hf->failed = true;
		return false;
	}
	COMP_CRC32C(hf->crc, data, len);
	return true;
}

/* Read past len bytes, counting them in the CRC. */
static bool
skip_bytes(HistoryFile *hf, uint64 len)
{
	static char buf[64 * 1024];

	while (len > 0 && !hf->failed)
	{
		Size		n = Min(len, sizeof(buf));

		get_bytes(hf, buf, n);
		len -= n;
	}
	return !hf->failed;
}

/*
 * Is the row at ring index i saved?  Whole, and of a sample after the last
 * reset: readings of the statements history for samples up to a reset can
 * be written just after it (reset.c).  Both row types begin with their
 * sample id.
 */
StaticAssertDecl(offsetof(AshRow, sample_id) == 0 &&
				 offsetof(PgsSampleRow, sample_id) == 0 &&
				 offsetof(PgsshRow, sample_id) == 0,
				 "rows begin with their sample id");

static bool
row_saved(PgsRing *ring, uint64 i)
{
	int64		sample_id;

	if (!pgs_ring_row_whole(ring, i))
		return false;
	memcpy(&sample_id, pgs_ring_row(ring, i), sizeof(int64));
	return sample_id > (int64) pg_atomic_read_u64(&pgs_state->reset.sample_id);
}

/* Rows of a ring saved, for the header. */
static uint64
count_whole_rows(PgsRing *ring)
{
	uint64		first;
	uint64		end;
	uint64		i;
	uint64		n = 0;

	pgs_ring_whole_range(ring, &first, &end);
	for (i = first; i < end; i++)
		if (row_saved(ring, i))
			n++;
	return n;
}

static void
put_whole_rows(HistoryFile *hf, PgsRing *ring)
{
	uint64		first;
	uint64		end;
	uint64		i;

	pgs_ring_whole_range(ring, &first, &end);
	for (i = first; i < end; i++)
		if (row_saved(ring, i))
			put_bytes(hf, pgs_ring_row(ring, i), ring->row_size);
}

/*
 * on_shmem_exit callback of the postmaster (or of a standalone backend):
 * write the history to the file, through a temporary file renamed into
 * place.  Only logs on failure: the server is shutting down.
 */
void
pgs_history_save(int code, Datum arg)
{
	HistoryFile hf = {0};
	HistoryHeader hdr;
	uint64		head;
	uint64		tail;
	uint64		pos;
	const char *data;
	uint32		len;
	pg_crc32c	crc;

	/* not after a crash (as pg_stat_statements): shared memory may be bad */
	if (code != 0 || pgs_state == NULL || !pgs_save_history)
		return;

	/* what readers see: nothing from before pgsentinel_reset() */
	head = pg_atomic_read_u64(&pgs_state->text.head);
	tail = Min(head, pgs_text_visible_tail());
	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = HISTORY_MAGIC;
	hdr.format = HISTORY_FORMAT;
	hdr.pg_major = PG_VERSION_NUM / 100;
	hdr.ash_row_size = sizeof(AshRow);
	hdr.pgssh_row_size = sizeof(PgsshRow);
	hdr.sample_row_size = sizeof(PgsSampleRow);
	hdr.last_sample_id = pgs_state->sampler.last_sample_id;
	hdr.history_id = pgs_state->sampler.history_id;
	for (pos = tail; pgs_text_next_entry(&pos, head, &data, &len);)
		hdr.ntexts++;
	hdr.nash = count_whole_rows(&pgs_state->sampler.ash);
	hdr.nsamples = count_whole_rows(&pgs_state->sampler.samples);
	hdr.npgssh = count_whole_rows(&pgs_state->statements.ring);

	hf.f = AllocateFile(HISTORY_FILE_TMP, PG_BINARY_W);
	if (hf.f == NULL)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not write pgsentinel history file \"%s\": %m",
						HISTORY_FILE_TMP)));
		return;
	}
	INIT_CRC32C(hf.crc);
	put_bytes(&hf, &hdr, sizeof(hdr));
	for (pos = tail; pgs_text_next_entry(&pos, head, &data, &len);)
	{
		HistoryText t;

		memset(&t, 0, sizeof(t));
		t.pos = pos - pgs_text_entry_size(len);
		t.len = len;
		put_bytes(&hf, &t, sizeof(t));
		put_bytes(&hf, data, len);
	}
	put_whole_rows(&hf, &pgs_state->sampler.ash);
	put_whole_rows(&hf, &pgs_state->sampler.samples);
	put_whole_rows(&hf, &pgs_state->statements.ring);
	crc = hf.crc;
	FIN_CRC32C(crc);
	if (!hf.failed && fwrite(&crc, 1, sizeof(crc), hf.f) != sizeof(crc))
		hf.failed = true;
	if (FreeFile(hf.f) != 0)
		hf.failed = true;
	if (hf.failed)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not write pgsentinel history file \"%s\": %m",
						HISTORY_FILE_TMP)));
		unlink(HISTORY_FILE_TMP);
		return;
	}
	if (durable_rename(HISTORY_FILE_TMP, HISTORY_FILE, LOG) != 0)
	{
		unlink(HISTORY_FILE_TMP);
		return;
	}
	ereport(LOG,
			(errmsg("pgsentinel saved %llu rows of active session history, %llu rows of statements history and %llu texts to \"%s\"",
					(unsigned long long) hdr.nash,
					(unsigned long long) hdr.npgssh,
					(unsigned long long) hdr.ntexts, HISTORY_FILE)));
}

/*
 * Read the whole file once: is it one of ours, whole and for this server?
 * Sets *hdr and *text_bytes (what its texts take in an area); on failure
 * sets *why.
 */
static bool
check_file(HistoryFile *hf, HistoryHeader *hdr, uint64 *text_bytes,
		   const char **why)
{
	uint64		i;
	uint64		prev_pos = 0;
	pg_crc32c	crc;
	pg_crc32c	stored;

	*text_bytes = 0;
	INIT_CRC32C(hf->crc);
	if (!get_bytes(hf, hdr, sizeof(*hdr)) || hdr->magic != HISTORY_MAGIC)
	{
		*why = "not a pgsentinel history file";
		return false;
	}
	if (hdr->format != HISTORY_FORMAT || hdr->ash_row_size != sizeof(AshRow) ||
		hdr->pgssh_row_size != sizeof(PgsshRow) ||
		hdr->sample_row_size != sizeof(PgsSampleRow))
	{
		*why = "written by another version of pgsentinel";
		return false;
	}
	if (hdr->pg_major != PG_VERSION_NUM / 100)
	{
		*why = "written by another major version of PostgreSQL";
		return false;
	}
	for (i = 0; i < hdr->ntexts; i++)
	{
		HistoryText t;

		if (!get_bytes(hf, &t, sizeof(t)) || t.len > MaxAllocSize ||
			(i > 0 && t.pos <= prev_pos) || !skip_bytes(hf, t.len))
		{
			*why = "its texts are damaged";
			return false;
		}
		prev_pos = t.pos;
		*text_bytes += pgs_text_entry_size(t.len);
	}
	if (hdr->nash > PG_INT64_MAX / sizeof(AshRow) ||
		hdr->npgssh > PG_INT64_MAX / sizeof(PgsshRow) ||
		hdr->nsamples > PG_INT64_MAX / sizeof(PgsSampleRow) ||
		!skip_bytes(hf, hdr->nash * sizeof(AshRow)) ||
		!skip_bytes(hf, hdr->nsamples * sizeof(PgsSampleRow)) ||
		!skip_bytes(hf, hdr->npgssh * sizeof(PgsshRow)))
	{
		*why = "it is shorter than its header says";
		return false;
	}
	crc = hf->crc;
	FIN_CRC32C(crc);
	if (fread(&stored, 1, sizeof(stored), hf->f) != sizeof(stored) ||
		!EQ_CRC32C(crc, stored) || fgetc(hf->f) != EOF)
	{
		*why = "its checksum does not match";
		return false;
	}
	return true;
}

/* Texts restored: their old positions, ascending, and new references. */
typedef struct TextMap
{
	uint64	   *old_pos;
	PgsTextRef *new_ref;
	uint64		n;
} TextMap;

/* A saved row's reference, mapped to the restored text (or none). */
static PgsTextRef
map_ref(const TextMap *map, PgsTextRef ref, uint64 row_index)
{
	uint64		lo = 0;
	uint64		hi = map->n;

	if (ref == PGS_TEXT_NONE)
		return PGS_TEXT_NONE;
	while (lo < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (map->old_pos[mid] < ref - 1)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == map->n || map->old_pos[lo] != ref - 1)
		return PGS_TEXT_NONE;
	pgs_text_restore_use(map->new_ref[lo], row_index);
	return map->new_ref[lo];
}

/*
 * Restore the texts, keeping the newest ones that fit: the file was
 * checked, and the reading is at the first text.
 */
static void
restore_texts(HistoryFile *hf, const HistoryHeader *hdr, uint64 text_bytes,
			  TextMap *map)
{
	uint64		to_skip = text_bytes > pgs_state->text.size ?
		text_bytes - pgs_state->text.size : 0;
	uint64		skipped = 0;
	char	   *buf = NULL;
	Size		buf_size = 0;
	uint64		i;

	map->n = 0;
	map->old_pos = palloc_extended(sizeof(uint64) * Max(hdr->ntexts, 1),
								   MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	map->new_ref = palloc_extended(sizeof(PgsTextRef) * Max(hdr->ntexts, 1),
								   MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	for (i = 0; i < hdr->ntexts; i++)
	{
		HistoryText t;
		PgsTextRef ref;

		if (!get_bytes(hf, &t, sizeof(t)))
			return;
		if (skipped < to_skip || map->old_pos == NULL || map->new_ref == NULL)
		{
			skipped += pgs_text_entry_size(t.len);
			skip_bytes(hf, t.len);
			continue;
		}
		if (t.len > buf_size)
		{
			buf_size = Max(t.len, 1024);
			buf = buf == NULL ?
				palloc_extended(buf_size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM) :
				repalloc_huge(buf, buf_size);
			if (buf == NULL)
			{
				buf_size = 0;
				skip_bytes(hf, t.len);
				continue;
			}
		}
		if (!get_bytes(hf, buf, t.len))
			return;
		ref = pgs_text_restore(buf, t.len);
		if (ref != PGS_TEXT_NONE)
		{
			map->old_pos[map->n] = t.pos;
			map->new_ref[map->n] = ref;
			map->n++;
		}
	}
}

/*
 * Restore the newest rows of a ring that fit: n rows of the file, the
 * reading at the first.  ASH rows get their texts mapped.  Returns the
 * rows restored; *max_sample_id grows to theirs.
 */
static uint64
restore_rows(HistoryFile *hf, PgsRing *ring, uint64 n, const TextMap *map,
			 int64 *max_sample_id)
{
	uint64		keep = Min(n, ring->capacity);
	char	   *rows = palloc(ring->row_size * RESTORE_BATCH_ROWS);
	uint64		done = 0;

	if (!skip_bytes(hf, (n - keep) * ring->row_size))
		return 0;
	while (done < keep)
	{
		uint64		count = Min(keep - done, RESTORE_BATCH_ROWS);
		uint64		j;

		if (!get_bytes(hf, rows, count * ring->row_size))
			break;
		for (j = 0; j < count; j++)
		{
			char	   *row = rows + j * ring->row_size;
			int64		sample_id;

			if (map != NULL)
			{
				AshRow	   *r = (AshRow *) row;
				uint64		index = done + j;

				r->application_name = map_ref(map, r->application_name, index);
				r->client_hostname = map_ref(map, r->client_hostname, index);
				r->top_level_query = map_ref(map, r->top_level_query, index);
				r->query = map_ref(map, r->query, index);
				r->blocking_pids = map_ref(map, r->blocking_pids, index);
				r->backend_type_name = map_ref(map, r->backend_type_name, index);
				sample_id = r->sample_id;
			}
			else
				memcpy(&sample_id, row, sizeof(int64));
			*max_sample_id = Max(*max_sample_id, sample_id);
		}
		pgs_ring_append(ring, rows, count);
		done += count;
	}
	pfree(rows);
	return done;
}

/*
 * Restore the history saved at the last clean shutdown, if any, into the
 * shared memory just created; then remove the file.  Runs in the postmaster
 * (or a standalone backend) before any other process exists.  Never raises
 * an error for a bad file: it logs why and starts with an empty history.
 */
void
pgs_history_load(void)
{
	HistoryFile hf = {0};
	HistoryHeader hdr;
	uint64		text_bytes;
	const char *why = NULL;
	MemoryContext cxt;
	MemoryContext oldcxt;
	TextMap		map;
	int64		max_sample_id;
	uint64		nash;
	uint64		nsamples;
	uint64		npgssh;

	hf.f = AllocateFile(HISTORY_FILE, PG_BINARY_R);
	if (hf.f == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not read pgsentinel history file \"%s\": %m",
							HISTORY_FILE)));
		return;
	}
	if (!check_file(&hf, &hdr, &text_bytes, &why))
	{
		ereport(LOG,
				(errmsg("pgsentinel history file \"%s\" ignored: %s",
						HISTORY_FILE, why),
				 errdetail("The history starts empty.")));
		FreeFile(hf.f);
		unlink(HISTORY_FILE);
		return;
	}

	cxt = AllocSetContextCreate(TopMemoryContext, "pgsentinel history restore",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	rewind(hf.f);
	hf.failed = false;
	INIT_CRC32C(hf.crc);
	get_bytes(&hf, &hdr, sizeof(hdr));
	restore_texts(&hf, &hdr, text_bytes, &map);

	(void) pgs_lock_exclusive();
	max_sample_id = hdr.last_sample_id;
	nash = restore_rows(&hf, &pgs_state->sampler.ash, hdr.nash, &map,
						&max_sample_id);
	nsamples = restore_rows(&hf, &pgs_state->sampler.samples, hdr.nsamples,
							NULL, &max_sample_id);
	npgssh = restore_rows(&hf, &pgs_state->statements.ring, hdr.npgssh, NULL,
						  &max_sample_id);
	pgs_state->sampler.last_sample_id = max_sample_id;
	/* the same history goes on: the archive goes on from its watermark */
	pgs_state->sampler.history_id = hdr.history_id;
	pgs_unlock_exclusive();

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	FreeFile(hf.f);
	unlink(HISTORY_FILE);

	ereport(LOG,
			(errmsg("pgsentinel restored %llu rows of active session history (%llu samples), %llu rows of statements history and %llu texts from \"%s\"",
					(unsigned long long) nash, (unsigned long long) nsamples,
					(unsigned long long) npgssh,
					(unsigned long long) map.n, HISTORY_FILE),
			 (nash < hdr.nash || npgssh < hdr.npgssh || map.n < hdr.ntexts) ?
			 errdetail("The file held %llu, %llu and %llu: the oldest did not fit the current settings.",
					   (unsigned long long) hdr.nash,
					   (unsigned long long) hdr.npgssh,
					   (unsigned long long) hdr.ntexts) : 0));
}
