/*-------------------------------------------------------------------------
 *
 * archive.h
 *		The archive: the archiver worker (archiver.c), its part of the
 *		shared state, its steps into the archive tables
 *		(archive_step.c, archive_statements.c), and the packed integer
 *		arrays of its batches (packed_ints.c).
 *
 * The archiver writes only its status in shared memory; it reads the
 * rings as every reader does.  The locking rules are written once, at the
 * top of shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_ARCHIVE_H
#define PGS_ARCHIVE_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "storage/latch.h"
#include "utils/array.h"

#include "db_worker.h"
#include "columns_gen.h"

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
 * The archiver's part of PgsSharedState.
 */
typedef struct PgsArchiverShared
{
	/*
	 * Archiver status (archiver.c): protected by lock.  The counters are
	 * those of the watermark's row, as of the last archiving committed.
	 */
	int32		pid;
	int			state;			/* PgsArchiveState */
	char		message[PGS_MESSAGE_LEN];
	char		waiting[PGS_MESSAGE_LEN];	/* partitions left: why */
	char		fleet_failed[PGS_MESSAGE_LEN];	/* the fleet's work that failed and
												 * when, if any (fleet.c) */
	char		fleet_error[PGS_MESSAGE_LEN];	/* and its error */
	TimestampTz last_time;		/* last archiving committed */
	TimestampTz last_sample_time;	/* watermark */
	int64		last_us;		/* duration of the last archiving */
	uint64		samples;		/* archived (kept) */
	uint64		samples_skipped;	/* downsampled */
	uint64		rows;
	uint64		samples_lost;
	uint64		rows_lost;
	int64		bytes;			/* the archive's tables, measured now and then */

	/*
	 * The archiver's latch (NULL while none runs), and for each area it
	 * archives from (the text area, the ASH ring, the statements ring) the
	 * area's head as of its last step and where the area's writer last woke
	 * it: the writer wakes it (pgs_archiver_wake_due()) when a quarter of
	 * the area has been written since its last step, before the interval
	 * is up, so that what is not archived yet is archived before it is
	 * overwritten (one role's flood of unique texts would otherwise evict
	 * everybody's texts; a busy minute would lap the rings).  wake says
	 * that a writer woke it: the archiver archives at once and clears it.
	 * Protected by lock; the writer calls SetLatch() after releasing it.
	 */
	Latch	   *latch;
	bool		wake;
	uint64		text_head;
	uint64		text_woken;
	uint64		ash_head;
	uint64		ash_woken;
	uint64		statements_head;
	uint64		statements_woken;
} PgsArchiverShared;

extern Latch *pgs_archiver_wake_due(uint64 written, uint64 size,
									uint64 head, uint64 *woken);

/* The result of one archiving step (archive_step.c). */
typedef struct PgsArchiveStepResult
{
	int64		samples_seen;
	int64		samples_kept;
	int64		rows;
	int64		samples_lost;
	int64		rows_lost;
	bool		more;			/* more samples wait */
	int64		held_from;		/* the first sample held back for its
								 * rows' query ids, 0 if none */
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

/* A step's statement and its plan, kept across steps (pgs_archive_execute). */
typedef struct PgsArchivePlan
{
	struct _SPI_plan *plan;		/* NULL until prepared */
	char	   *sql;			/* the text it was prepared from */
} PgsArchivePlan;

/* archive_step.c */
extern char *pgs_archive_template(const char *schema, const char *fn,
								  const char *arg);
extern int	pgs_archive_execute(PgsArchivePlan *cache, const char *sql,
								int nargs, Oid *argtypes, Datum *args);
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

/* batch_times.c: a batch's times, as microseconds after another */
extern TimestampTz pgs_us_after(TimestampTz t, int64 us);

/*
 * packed_ints.c: a batch's packed integer arrays, read in order.  The
 * fields are the reader's own.
 */
typedef struct PgsPackedReader
{
	const unsigned char *p;		/* the next number */
	const unsigned char *end;
	const unsigned char *bitmap;	/* NULL: no element is NULL */
	int			n;				/* elements */
	int64		values;			/* elements that are not NULL */
	int			i;				/* elements read */
	bool		differences;	/* the numbers are differences, not values */
	int64		prev;			/* the last value read */
	const int64 *dict;			/* not NULL: the numbers are indexes into
								 * it, the array's distinct values */
	int			ndict;
} PgsPackedReader;

extern int	pgs_packed_begin(PgsPackedReader *r, bytea *packed);
extern int	pgs_packed_begin_bytes(PgsPackedReader *r, const char *data, int len);
extern bool pgs_packed_next(PgsPackedReader *r, int64 *value);
extern void pgs_put_varint(StringInfo buf, uint64 u);
extern const char *pgs_get_varint(const unsigned char **p,
								  const unsigned char *end, uint64 *u);
extern void pgs_pack_values(StringInfo buf, const int64 *values,
							const bool *nulls, int n, StringInfo context);
extern void pgs_pack_array(StringInfo buf, ArrayType *a, StringInfo context);
extern void pgs_check_count(uint64 count);
extern bool pgs_shorter_compressed(const char *a, int alen, const char *b, int blen,
								   StringInfo context);

/* A packed array written one element at a time (packed_ints.c). */
typedef struct PgsPackedWriter
{
	StringInfoData bitmap;		/* of the elements that are not NULL */
	StringInfoData numbers;		/* their differences' varints */
	StringInfoData values;		/* their values' varints */
	int			n;
	bool		any_null;
	int64		prev;
	StringInfo	context;		/* the body it goes into, or NULL
								 * (pgs_shorter_compressed()) */
} PgsPackedWriter;

extern void pgs_packed_write_init(PgsPackedWriter *w);
extern void pgs_packed_write(PgsPackedWriter *w, int64 value, bool isnull);
extern void pgs_packed_write_end(PgsPackedWriter *w, StringInfo buf);
extern void pgs_packed_write_free(PgsPackedWriter *w);

/*
 * batch_format.c: the rows of a batch as one versioned payload.  A layout
 * is the kind of each of its columns; a reader's view of one column: its
 * kind and bytes.
 */
#define PGS_BATCH_FORMAT			1
/* the layouts' columns: src/columns.txt's [row_data], [reading_data],
 * [minute_data], [session_minute_data] and [blocking_minute_data] */
#define PGS_BATCH_ROW_COLUMNS		PGS_ROW_DATA_COLS
#define PGS_BATCH_READING_COLUMNS	PGS_READING_DATA_COLS
/* (the minute rollups' payloads have fewer columns than the session rows) */
#define PGS_BATCH_MAX_COLUMNS		Max(Max(PGS_ROW_DATA_COLS, PGS_READING_DATA_COLS), \
										PGS_BLOCKING_MINUTE_DATA_COLS)

typedef enum PgsBatchColumnKind
{
	PGS_BATCH_ABSENT = 0,		/* every element NULL */
	PGS_BATCH_PACKED = 1,		/* integers, packed_ints.c */
	PGS_BATCH_TEXTS = 2,		/* texts */
	PGS_BATCH_FLOAT8 = 3,		/* double precision */
	PGS_BATCH_TEXT_IDS = 4,		/* texts, as ids into the column's distinct
								 * texts: stored only, read as PGS_BATCH_TEXTS */
	PGS_BATCH_TEXT_NUMBERS = 5,	/* texts, as ids into the column's distinct
								 * texts with their numbers cut out, and the
								 * numbers: stored only, read as
								 * PGS_BATCH_TEXTS */
	PGS_BATCH_FLOAT8_INTEGERS = 6	/* double precision whose every element
									 * is a whole number: packed integers,
									 * stored only, read as PGS_BATCH_FLOAT8 */
} PgsBatchColumnKind;

/* a kind past it was written by a newer pgsentinel */
#define PGS_BATCH_LAST_KIND		PGS_BATCH_FLOAT8_INTEGERS

typedef struct PgsBatchLayout
{
	int			ncols;
	int			min_ncols;		/* the columns of the layout's first version */
	const PgsBatchColumnKind *kinds;
} PgsBatchLayout;

extern const PgsBatchLayout pgs_rows_layout;
extern const PgsBatchLayout pgs_readings_layout;
extern const PgsBatchLayout pgs_minute_layout;
extern const PgsBatchLayout pgs_session_minute_layout;
extern const PgsBatchLayout pgs_blocking_minute_layout;
extern const PgsBatchLayout pgs_samples_layout;

typedef struct PgsBatchColumnBytes
{
	PgsBatchColumnKind kind;
	PgsBatchColumnKind stored;	/* as the payload stores it: a texts
								 * column's PGS_BATCH_TEXTS, _TEXT_IDS or
								 * _TEXT_NUMBERS, a double precision
								 * column's _FLOAT8 or _FLOAT8_INTEGERS */
	const char *data;
	int			len;
} PgsBatchColumnBytes;

/* A texts column read in order (fields are the reader's own). */
typedef struct PgsTextsReader
{
	const unsigned char *p;
	const unsigned char *end;
	int			n;				/* elements */
	int			i;				/* elements read */
	PgsBatchColumnKind stored;
	/* stored as ids (PGS_BATCH_TEXT_IDS): the distinct texts, the ids */
	int			ndistinct;
	const char **distinct;
	int		   *distinct_len;
	PgsPackedReader ids;
	/* with numbers (PGS_BATCH_TEXT_NUMBERS): each position's, the text made */
	int			npositions;
	PgsPackedReader *numbers;
	StringInfoData made;
} PgsTextsReader;

/* A double precision column read in order (fields are the reader's own). */
typedef struct PgsFloatsReader
{
	const unsigned char *p;		/* the next value's bytes */
	const unsigned char *bitmap;	/* NULL: no element is NULL */
	int			n;				/* elements */
	int			i;				/* elements read */
	bool		integers;		/* PGS_BATCH_FLOAT8_INTEGERS: read from ints */
	PgsPackedReader ints;
} PgsFloatsReader;

extern void pgs_batch_open(bytea *payload, const PgsBatchLayout *layout,
						   PgsBatchColumnBytes *cols);
extern int	pgs_texts_begin(PgsTextsReader *r, const PgsBatchColumnBytes *col);
extern bool pgs_texts_next_bytes(PgsTextsReader *r, const char **s, int *len);
extern bool pgs_texts_next(PgsTextsReader *r, Datum *value);
extern int	pgs_floats_begin(PgsFloatsReader *r, const PgsBatchColumnBytes *col);
extern bool pgs_floats_next(PgsFloatsReader *r, uint64 *bits);
extern bool pgs_floats_next_datum(PgsFloatsReader *r, Datum *value);

/* archiver.c */
extern void pgs_archiver_supervise(void);
extern const char *pgs_archive_state_name(int state);
extern PGDLLEXPORT void pgsentinel_archiver_main(Datum main_arg);

#endif							/* PGS_ARCHIVE_H */
