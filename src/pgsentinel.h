/*-------------------------------------------------------------------------
 *
 * pgsentinel.h
 *		Shared declarations of pgsentinel: the shared-memory layout, the
 *		record formats, and the prototypes, grouped by the file that owns
 *		them.
 *
 * The locking rules are written once, at the top of shmem.c.
 *
 * Prefixes: pgs_ / Pgs / PGS_ for the whole module; pgssh_ / Pgssh for the
 * pg_stat_statements history ("pg_stat_statements history"), its ring,
 * worker and request channel (the pgssh_*.c files); pgsentinel_ for what
 * SQL sees.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSENTINEL_H
#define PGSENTINEL_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/backend_status.h"
#include "utils/tuplestore.h"

#define PGS_NAME				"pgsentinel"
#define PGS_WORKER_TYPE			"pgsentinel"

/*
 * A reference into the text area: 1 + the logical byte position of the
 * entry, or PGS_TEXT_NONE.  Logical positions only grow; the entry is still
 * stored while position >= text_tail.
 */
typedef uint64 PgsTextRef;
#define PGS_TEXT_NONE			((PgsTextRef) 0)

/* Session state, as far as ASH cares (decoded to pg_stat_activity's words). */
typedef enum PgsState
{
	PGS_STATE_ACTIVE = 1,
	PGS_STATE_FASTPATH,
	PGS_STATE_IDLE_IN_XACT,
	PGS_STATE_IDLE_IN_XACT_ABORTED,
	PGS_STATE_IDLE,
	PGS_STATE_OTHER
} PgsState;

/* Command types, in 1.4's words (see cmdtype_name() in ash_view.c). */
typedef enum PgsCmdType
{
	PGS_CMD_UNKNOWN = 0,
	PGS_CMD_SELECT,
	PGS_CMD_UPDATE,
	PGS_CMD_INSERT,
	PGS_CMD_DELETE,
	PGS_CMD_MERGE,
	PGS_CMD_UTILITY,
	PGS_CMD_NOTHING
} PgsCmdType;

/*
 * One row of active session history.  Fixed size, no pointers: texts live
 * in the text area, names are resolved from OIDs when read, the wait event
 * is kept as core's 32-bit code.
 */
typedef struct AshRow
{
	int64		sample_id;
	TimestampTz ash_time;
	TimestampTz backend_start;
	TimestampTz xact_start;
	TimestampTz query_start;
	TimestampTz state_change;
	uint64		queryid;		/* top-level statement, 0 = unknown */
	uint64		nested_queryid; /* statement actually executing */
	PgsTextRef	application_name;
	PgsTextRef	client_hostname;
	PgsTextRef	top_level_query;
	PgsTextRef	query;
	PgsTextRef	blocking_pids;	/* int32 array */
	PgsTextRef	backend_type_name;	/* background workers only */
	int32		pid;
	int32		leader_pid;		/* 0 = none */
	int32		client_port;	/* 0 = none, -1 = Unix socket */
	int32		blockers;
	int32		blockerpid;
	Oid			datid;
	Oid			usesysid;
	Oid			blocker_usesysid;	/* role of blockerpid, for blocker_state */
	uint32		wait_event_info;
	TransactionId backend_xid;
	TransactionId backend_xmin;
	uint8		client_addr[16];
	uint8		client_family;	/* 0, AF_INET or AF_INET6 */
	uint8		state;			/* PgsState */
	uint8		blocker_state;	/* PgsState of blockerpid, 0 = unknown */
	uint8		cmdtype;		/* PgsCmdType */
	uint8		backend_type;	/* core's BackendType */
	uint32		period_us;		/* sampling period of its sample: its weight */
} AshRow;

StaticAssertDecl(sizeof(AshRow) == 184,
				 "the period fits where the row had padding");

/*
 * The DB time a row stands for, in seconds: its sample's period if the
 * session was active, 0 if it was sampled while idle (in transaction) --
 * with track_idle_trans, or because it blocked a sampled session.  What
 * every load figure sums (the view's weight column, the archive's rollups).
 */
static inline double
pgs_row_weight(const AshRow *row)
{
	if (row->state == PGS_STATE_ACTIVE || row->state == PGS_STATE_FASTPATH)
		return row->period_us / 1000000.0;
	return 0.0;
}

/*
 * One row of pg_stat_statements history: the counters of one statement
 * (userid, dbid, queryid, toplevel) at the moment of one ASH sample.
 */
typedef struct PgsshRow
{
	int64		sample_id;
	TimestampTz ash_time;
	uint64		queryid;
	Oid			userid;
	Oid			dbid;
	bool		toplevel;
	int64		calls;
	int64		rows;
	int64		plans;
	int64		shared_blks_hit;
	int64		shared_blks_read;
	int64		shared_blks_dirtied;
	int64		shared_blks_written;
	int64		local_blks_hit;
	int64		local_blks_read;
	int64		local_blks_dirtied;
	int64		local_blks_written;
	int64		temp_blks_read;
	int64		temp_blks_written;
	int64		wal_records;
	int64		wal_fpi;
	int64		wal_bytes;
	double		total_exec_time;
	double		total_plan_time;
	double		blk_read_time;
	double		blk_write_time;
} PgsshRow;

/*
 * One sample, whether or not it found an active session: what makes
 * average active sessions exact.  A row of the ASH ring stands for
 * period_us of one session's time.
 */
typedef struct PgsSampleRow
{
	int64		sample_id;
	TimestampTz sample_time;	/* the ash_time of its rows */
	int64		period_us;		/* sampling period it was taken at */
	int32		nrows;			/* rows it wrote to the ASH ring */
	int32		nactive;		/* of them, those of active sessions */
} PgsSampleRow;

/*
 * A statement the sampler asks the statements worker to read: its query id
 * in a database, for every user pg_stat_statements recorded it under (the
 * current user, which SET ROLE and SECURITY DEFINER functions change, not
 * the session's user that the sampler sees).
 */
typedef struct PgsshKey
{
	uint64		queryid;
	Oid			dbid;
} PgsshKey;

/* What the statements history is doing, for pgsentinel_status(). */
typedef enum PgsshState
{
	PGSSH_DISABLED = 0,			/* pgsentinel_pgssh.enable is off */
	PGSSH_NOT_LOADED,			/* pg_stat_statements not preloaded */
	PGSSH_STARTING,				/* worker launched, connecting */
	PGSSH_NOT_CONNECTED,		/* worker could not connect to db_name */
	PGSSH_NOT_CREATED,			/* extension missing in db_name */
	PGSSH_INCOMPATIBLE,			/* its columns are not what we read */
	PGSSH_FAILING,				/* reading it raised an error */
	PGSSH_OK
} PgsshState;

/* A worker's status message in shared memory (statements worker, archiver). */
#define PGS_MESSAGE_LEN 256

/* What the archiver is doing, for pgsentinel_status(). */
typedef enum PgsArchiveState
{
	PGS_ARCHIVE_DISABLED = 0,	/* pgsentinel_archive.enable is off */
	PGS_ARCHIVE_STARTING,		/* worker launched, connecting */
	PGS_ARCHIVE_NOT_CONNECTED,	/* worker could not connect to db_name */
	PGS_ARCHIVE_NOT_CREATED,	/* extension missing or older than 2.1 */
	PGS_ARCHIVE_STANDBY,		/* in recovery: the primary archives */
	PGS_ARCHIVE_FAILING,		/* archiving raised an error */
	PGS_ARCHIVE_OK
} PgsArchiveState;

/*
 * The cache line the sampler fetches ahead: x86-64's and most ARM cores'.
 * Core's PG_CACHE_LINE_SIZE (128) is padding against false sharing.
 */
#define PGS_FETCH_LINE_SIZE		64

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
 * The one shared-memory allocation.  Header first, then the ASH ring, the
 * text area and the backend slots, at the offsets recorded here.
 */
typedef struct PgsSharedState
{
	LWLock	   *lock;			/* see the rules at the top of shmem.c */

	/* Layout, fixed at startup (each ring keeps its own capacity). */
	Size		text_size;
	Size		text_offset;
	int			nslots;
	Size		slot_size;
	Size		slots_offset;

	/*
	 * ASH ring and the ring of samples: written under lock, read without it
	 * (ring.c).  history_id names this history: random when shared memory
	 * is created empty, restored with the rows at a restart (persist.c);
	 * the archive watermark holds it, so that a history that starts again
	 * (after a crash, on a promoted standby) is recognized.
	 */
	PgsRing		ash;
	PgsRing		samples;
	int64		last_sample_id; /* protected by lock */
	uint64		history_id;		/* set at startup */

	/*
	 * The oldest sample with rows still waiting for their statement's query
	 * id (queryid_backfill.c), 0 if none, and its time: the archiver leaves
	 * it and the samples after it in the ring for a while (archive_step.c).
	 * Protected by lock.
	 */
	int64		pending_sample_id;
	TimestampTz pending_sample_time;

	/*
	 * Text area: written under lock; head and tail are atomics so that
	 * readers can copy the area without it (shmem.c).
	 */
	pg_atomic_uint64 text_head; /* logical position of the next entry */
	pg_atomic_uint64 text_tail; /* oldest entry still stored */
	uint64		texts_stored;	/* entries ever written */
	uint64		texts_dropped;	/* evicted while a row in the ring used them */

	/*
	 * pgsentinel_reset() (reset.c): written under lock, the atomics also
	 * read without it.  Readers see no text before text_visible_from and no
	 * statements row of a sample up to reset_sample_id; each ring has its
	 * own visible_from.
	 */
	pg_atomic_uint64 text_visible_from;
	pg_atomic_uint64 reset_sample_id;	/* an int64 */
	pg_atomic_uint64 resets;	/* resets so far */
	TimestampTz reset_time;		/* of the last one, 0 = none */

	/* Worker status: protected by lock. */
	int32		worker_pid;		/* 0 when not running */
	TimestampTz worker_started;
	uint64		samples_taken;
	TimestampTz last_sample_time;
	int64		last_sample_us; /* duration of the last sample */
	int64		max_sample_us;
	int64		max_lock_wait_us;	/* longest wait of the sampler for lock */
	uint64		rows_backfilled;	/* query ids completed after the fact */
	uint64		blockers_via_core;	/* lock waits given to pg_blocking_pids() */
	uint64		sample_overruns;	/* samples later than one period */
	double		worker_period;	/* settings as the sampler last read them */
	bool		worker_track_idle_trans;

	/*
	 * Statements ring: written by the statements worker under lock, read
	 * without it (ring.c).
	 */
	PgsRing		pgssh;

	/* Sampler's request to the statements worker: protected by lock. */
	Size		request_offset;
	int			request_max_keys;
	uint64		request_seq;	/* bumped by each new request */
	pg_atomic_uint64 request_taken_seq; /* the last one the worker took */
	int64		request_sample_id;
	TimestampTz request_ash_time;
	int			request_nkeys;

	/* Statements worker status: protected by lock. */
	int32		pgssh_pid;
	Latch	   *pgssh_latch;
	int			pgssh_state;	/* PgsshState */
	char		pgssh_message[PGS_MESSAGE_LEN];
	uint64		pgssh_samples;
	int64		pgssh_last_us;
	int64		pgssh_max_us;
	uint64		requests_skipped;	/* merged into a later one, not read */
	uint64		pgssh_keys_dropped; /* final readings lost: request full */

	/*
	 * Archiver status (archiver.c): protected by lock.  The counters are
	 * those of the watermark's row, as of the last archiving committed.
	 */
	int32		archive_pid;
	int			archive_state;	/* PgsArchiveState */
	char		archive_message[PGS_MESSAGE_LEN];
	char		archive_waiting[PGS_MESSAGE_LEN]; /* partitions left: why */
	TimestampTz archive_last_time;	/* last archiving committed */
	TimestampTz archive_last_sample_time;	/* watermark */
	int64		archive_last_us;	/* duration of the last archiving */
	uint64		archive_samples;	/* archived (kept) */
	uint64		archive_samples_skipped;	/* downsampled */
	uint64		archive_rows;
	uint64		archive_samples_lost;
	uint64		archive_rows_lost;
	int64		archive_bytes;	/* the archive's tables, measured now and then */

	/*
	 * The archiver's latch (NULL while none runs), the text area's head as
	 * of its last step, and where the sampler last woke it: the sampler
	 * wakes it when a quarter of the area has been written since its last
	 * step, so that the texts of rows not archived yet are archived before
	 * new texts overwrite them (one role's flood of unique texts would
	 * otherwise evict everybody's).  Protected by lock.
	 */
	Latch	   *archive_latch;
	uint64		archive_text_head;
	uint64		archive_text_woken;
} PgsSharedState;

/* The result of one archiving step (archive_step.c). */
typedef struct PgsArchiveStepResult
{
	int64		samples_seen;
	int64		samples_kept;
	int64		rows;
	int64		samples_lost;
	int64		rows_lost;
	bool		more;			/* more samples wait */
	TimestampTz last_sample_time;	/* the new watermark, 0 if none */
} PgsArchiveStepResult;

/* The result of one statements archiving step (archive_statements.c). */
typedef struct PgsArchiveStatementsResult
{
	int64		readings;		/* readings of the statements ring archived */
	int64		rows;			/* delta rows stored */
	int64		rows_unchanged; /* not stored: no counter moved */
	int64		texts;			/* statement texts copied */
	uint64		ring_written;	/* rows the ring had written before */
} PgsArchiveStatementsResult;

/* guc.c */
extern double pgs_sampling_period;
extern int	pgs_ash_max_entries;
extern int	pgs_text_area_kb;
extern char *pgs_db_name;
extern bool pgs_track_idle_trans;
extern int	pgs_pgssh_max_entries;
extern bool pgs_pgssh_enable;
extern bool pgs_save_history;
extern bool pgs_archive_enable;
extern int	pgs_archive_interval_ms;
extern int	pgs_archive_keep_one_in;
extern int	pgs_archive_retention_min;
extern int	pgs_archive_minute_retention_min;
extern int	pgs_archive_hour_retention_min;
extern void pgs_define_settings(void);

/*
 * A reader of the text area (text_area.c): the last text it looked up, in
 * a buffer as large as the largest text it has looked up.
 */
typedef struct PgsTextReader
{
	MemoryContext cxt;
	char	   *buf;
	Size		buf_size;
	uint64		floor;			/* text_visible_from of the reader's query */
} PgsTextReader;

/*
 * What one query reads of a ring (ring.c, pgs_ring_query_bounds): its rows,
 * and the reset state when it fixed them, so that every scan of the query
 * sees the same texts and readings whatever a reset does meanwhile.
 */
typedef struct PgsQueryBounds
{
	uint64		first;			/* rows [first, end) */
	uint64		end;
	uint64		text_floor;		/* text_visible_from */
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

/* shmem.c */
extern PgsSharedState *pgs_state;
extern Size pgs_shmem_size(void);
extern void pgs_shmem_request(void);
extern bool pgs_shmem_startup(void);
extern void pgs_check_loaded(void);
extern AshRow *pgs_ash_rows(void);
extern char *pgs_text_area(void);
extern PgsBackendSlot *pgs_backend_slot(int procno);
extern PgsshRow *pgs_pgssh_rows(void);
extern PgsshKey *pgs_request_keys(void);

extern int64 pgs_lock_exclusive(void);
extern void pgs_unlock_exclusive(void);
extern void pgs_prefault(const void *start, Size size);

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

/* persist.c: the history kept across restarts */
extern void pgs_history_load(void);
extern void pgs_history_save(int code, Datum arg);

/* hooks.c */
extern void pgs_install_hooks(void);

/*
 * backend_status_reader.c: the sampler's copies of what each session
 * publishes -- core's backend-status entries and pgsentinel's backend slots.
 * These types are read by sampler.c and queryid_backfill.c too.
 */

/*
 * What the sampler keeps per backend-status slot between samples (in that
 * slot's SessionCopy; unused when the snapshot is read instead).  The same
 * session (pid, backend start) with the same statement start has the same
 * statement text, and the same session the same client host name: the
 * slot's private copies from an earlier sample are still right and are not
 * read again, and the reference stored for that text is used again without
 * hashing or comparing it.  Copying the text anew drops the reference.  The
 * application name can change at any time (SET application_name): it is
 * compared with the slot's copy, and its reference kept while it is equal.
 * Texts that may change from one sample to the next without the status
 * entry changing -- the nested statement, the blocker list -- are compared
 * with the text their last reference points to (text_like_last).  The
 * first blocker's status slot is a hint, verified by pid before use.
 */
typedef struct ActivityMemo
{
	PgsTextRef	ref;			/* of the copied statement text, or none */
	PgsTextRef	appname_ref;	/* of the copied application name, or none */
	PgsTextRef	blockers_ref;	/* of the last blocker list, or none */
	PgsTextRef	nested_ref;		/* of the last nested statement, or none */
	int			blocker_slot;	/* status slot of the last first blocker */
} ActivityMemo;

/*
 * What the slot's private text copies were made from, and the lengths of
 * the texts its memo references: read only when the status entry has
 * changed (and the lengths in assertions), so kept apart from the copy
 * that every row reads.
 */
typedef struct CopyOrigin
{
	int32		copied_pid;		/* the session the copies describe, 0: none */
	TimestampTz copied_backend_start;
	TimestampTz copied_activity_start;
	uint32		len;			/* of the text memo.ref points to */
	uint32		appname_len;	/* of the text memo.appname_ref points to */
} CopyOrigin;

/*
 * What the sampler copies of one backend-status entry: only the fields a
 * row needs (not the progress counters, not the SSL/GSS pointers), so that
 * reading an entry touches as few of its cache lines as possible.  For a
 * session that is not to be sampled only pid, state, statement start and
 * query id are filled in; for one to be sampled all fields, and its texts
 * in the slot's buffers (pgs_session_texts()).
 *
 * The copy of a status slot is kept from sample to sample, and the entry's
 * st_changecount at the time it was read with it (in the slot's
 * SlotGlance).  Every change of an entry --
 * session start and end, statement, state, query id, application name,
 * progress -- goes through core's change-counter protocol and moves that
 * counter, so while it is even and the same the entry has not changed and
 * the copy is reused: a session in the same state and statement as at the
 * previous sample costs one load.  (Wait events, xid and xmin live in
 * PGPROC, which is read for every sampled row.)
 */
typedef struct SessionCopy
{
	int32		pid;
	BackendState state;
	BackendType backend_type;
	Oid			datid;
	Oid			userid;
	int32		client_port;	/* as AshRow */
	int			status_slot;	/* in core's array; -1 from the snapshot */
	uint8		client_family;
	uint8		client_addr[16];
	bool		sampled;
	bool		has_hostname;	/* its hostname text is not empty */
	TimestampTz proc_start;
	TimestampTz xact_start;
	TimestampTz activity_start;
	TimestampTz state_start;
	uint64		query_id;
	ActivityMemo memo;			/* direct reads only */
} SessionCopy;

/*
 * Every sampled row reads its slot's SessionCopy: the fields above are the
 * ones a row needs, in two cache lines (the array is aligned to a line),
 * both fetched ahead during the pass over the slots.  The texts live in
 * the slot's buffers (pgs_session_texts()), what they were copied from in a
 * CopyOrigin.
 */
StaticAssertDecl(sizeof(SessionCopy) <= 2 * PGS_FETCH_LINE_SIZE,
				 "SessionCopy must fit in the two cache lines fetched ahead");

extern void pgs_status_reader_init(void);
extern int	pgs_read_sessions(SessionCopy **copies, const int **sampled);
extern void pgs_forget_slot_copies(void);
extern SessionCopy *pgs_session_by_pid(int32 pid);
extern bool pgs_complete_session(SessionCopy *s);
extern struct PGPROC *pgs_session_proc(const SessionCopy *s);
extern int	pgs_session_number(const SessionCopy *s);
extern void pgs_session_texts(const SessionCopy *s, char **appname,
							  char **hostname, char **activity);
extern ActivityMemo *pgs_session_memo(const SessionCopy *s,
									  CopyOrigin **origin);
extern SessionCopy *pgs_blocker_session(ActivityMemo *memo, int32 pid);
extern bool pgs_read_backend_slot(int procno, int pid, PgsBackendSlot *copy);

/*
 * queryid_backfill.c: query ids completed after the fact, both sides of
 * the request word of PgsBackendSlot.
 */
typedef struct PgsBackfill PgsBackfill;

/*
 * Has the sampler asked this backend for a query id?  Inline: the hooks
 * test it on every top-level statement.
 */
static inline bool
pgs_query_id_wanted(PgsBackendSlot *slot)
{
	return pg_atomic_read_u64(&slot->query_id_wanted) != 0;
}

extern void pgs_answer_query_id_request(PgsBackendSlot *slot, uint64 queryid,
										uint8 cmdtype, const char *source,
										int location, int len);
extern void pgs_backfill_init(void);
extern bool pgs_room_for_pending(void);
extern void pgs_remember_pending(const AshRow *row, const SessionCopy *local,
								 uint64 row_index);
/*
 * Samples with rows still waiting for their statement's query id (a lock
 * waited for while the statement was parsed) stay out of the archive, with
 * those after them, until the query ids are known, for at most this long:
 * the sampler completes the rows in the ring, and the archive would keep
 * them without.
 */
#define PGS_ARCHIVE_HOLD_MAX_MS	(60 * 1000)
extern int64 pgs_oldest_pending_sample(TimestampTz *sample_time,
									   TimestampTz newer_than);
extern int	pgs_find_backfills(PgsBackfill **fills, uint64 ash_written,
							   int64 sample_id);
extern void pgs_apply_backfills(const PgsBackfill *fills, int nfills,
								uint64 ash_written);

/* blockers.c: the blockers of a sample's lock waiters, in one pass */
typedef struct PgsLockWaiter
{
	struct PGPROC *proc;		/* in: the waiter */
	int32		pid;			/* in */
	int			row;			/* in: the caller's row number */
	int			nblockers;		/* out: 0 = no longer waiting */
	int			list_len;		/* private: see pgs_blocker_list() */
	int			first_blocker;	/* private */
	struct LOCK *lock;			/* private */
	int			group;			/* private */
	int			self;			/* private */
	int			mode;			/* private */
	bool		resolved;		/* private */
	bool		alone;			/* private: leads a lock group of itself */
} PgsLockWaiter;
extern void pgs_blockers_init(void);
extern int	pgs_find_blockers(PgsLockWaiter *waiters, int nwaiters, int *order);
extern const int32 *pgs_blocker_list(const PgsLockWaiter *w, int *list_len);

/* sampler.c */
extern void pgs_register_worker(void);
extern PGDLLEXPORT void pgsentinel_main(Datum main_arg);

/*
 * pgssh_request.c, pgssh_worker.c: the statements worker, and the
 * sampler's side of it
 */
extern PGDLLEXPORT void pgsentinel_pgssh_main(Datum main_arg);
extern void pgssh_sampler_init(void);
extern int	pgssh_collect_keys(const AshRow *rows, int nrows, PgsshKey *keys);
extern void pgssh_publish_request_locked(const PgsshKey *keys, int nkeys,
										 int64 sample_id, TimestampTz ash_time);
extern void pgssh_notify(void);
extern void pgssh_supervise(void);
extern void pgssh_set_state(PgsshState state, const char *message);
extern const char *pgssh_state_name(int state);

/* columns.c */
#define PGS_MAX_COLUMNS 64
extern void pgs_map_columns(TupleDesc desc, const char *const *known,
							const Oid *known_types, int nknown, int *map);
extern void pgs_put_mapped(Tuplestorestate *store, TupleDesc desc,
						   const int *map, const Datum *values,
						   const bool *nulls);

/* ash_view.c: reading the history as SQL values */
#define PGS_ASH_COLS 34
extern const char *const pgs_ash_columns[PGS_ASH_COLS];
extern const Oid pgs_ash_column_types[PGS_ASH_COLS];
typedef struct AshReader AshReader;
extern AshReader *pgs_ash_reader_begin(MemoryContext query_cxt,
										MemoryContext parent_cxt);
extern void pgs_ash_reader_end(AshReader *rd);
extern bool pgs_ash_reader_next(AshReader *rd, Datum *values, bool *nulls,
								const bool *want);
extern bool pgs_ash_reader_skip(AshReader *rd);
extern void pgs_ash_reader_rewind(AshReader *rd);
extern void pgs_ash_reader_set_sample_range(AshReader *rd, int64 min,
											int64 max);
extern const char *pgs_state_name(uint8 state);
extern const char *pgs_cmdtype_name(uint8 cmdtype);

/* db_worker.c */
typedef struct PgsWorkerLauncher
{
	const char *function;		/* entry point in the library */
	const char *name;			/* bgw_name and bgw_type */
	BackgroundWorkerHandle *handle;
	TimestampTz next_launch;
	int			delay_ms;
} PgsWorkerLauncher;

typedef enum PgsLaunch
{
	PGS_LAUNCH_RUNNING,			/* running, or about to start */
	PGS_LAUNCH_EXITED,			/* it exited: launched again after a delay */
	PGS_LAUNCH_WAITING,			/* waiting for the delay to pass */
	PGS_LAUNCH_NO_SLOT,			/* no background worker slot was free */
	PGS_LAUNCH_LAUNCHED
} PgsLaunch;

extern PgsLaunch pgs_supervise_db_worker(PgsWorkerLauncher *l, bool healthy);
extern void pgs_db_worker_connect(const char *appname);
extern void pgs_db_worker_set(const char *name, const char *value);
extern void pgs_db_worker_sigterm(SIGNAL_ARGS);
extern void pgs_db_work_begin(void);
extern void pgs_db_work_commit(void);
extern void pgs_db_work_abort(void);

/* archive_step.c */
extern char *pgs_archive_template(const char *schema, const char *fn,
								  const char *arg);
extern void pgs_archive_step(const char *schema, int keep_one_in,
							 int max_samples, TimestampTz oldest_kept,
							 PgsArchiveStepResult *result);
extern int	pgs_archive_partitions(const char *schema, Oid nspid,
								   TimestampTz from, int *dropped, int *busy,
								   int *create_busy, char *waiting);
extern TimestampTz pgs_archive_oldest_kept(void);

/* archive_statements.c */
extern void pgs_archive_statements_step(const char *schema,
										TimestampTz oldest_kept,
										PgsArchiveStatementsResult *result);
extern TimestampTz pgs_archive_statements_oldest(void);

/* fleet.c */
extern void pgs_fleet_tick(void);

/* archiver.c */
extern void pgs_archiver_supervise(void);
extern const char *pgs_archive_state_name(int state);
extern PGDLLEXPORT void pgsentinel_archiver_main(Datum main_arg);

#endif							/* PGSENTINEL_H */
