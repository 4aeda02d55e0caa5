/*-------------------------------------------------------------------------
 *
 * pgssh_worker.c
 *		The statements worker: reads pg_stat_statements for the statements
 *		of each ASH sample and appends their counters to the statements
 *		ring, stamped with the sample's id and time.
 *
 * It connects to pgsentinel.db_name, checks that pg_stat_statements is
 * created there with the columns it reads, prepares one query, and then
 * waits for the sampler's requests (pgssh_request.c).  The query asks for
 * the counters only -- pg_stat_statements(false) never reads the query-text
 * file -- and keeps the rows of the requested statements.  When anything is
 * missing or fails, ASH sampling goes on regardless, the state and the
 * remedy are logged once and shown by pgsentinel_status(), and the check is
 * repeated, so that CREATE EXTENSION pg_stat_statements later starts the
 * history without a restart.
 *
 * A request is taken only when it can be served: at start the worker serves
 * the one left by the sampler (or by a worker that exited), and while
 * pg_stat_statements is unusable it leaves requests untaken, so the sampler
 * merges them (pg_stat_statements keeps counting while the extension is not
 * created, so those final readings are still there to read).  It looks again
 * at most every RECHECK_MIN_MS while requests wait, every RECHECK_MS
 * otherwise.
 *
 * SIGTERM (server shutdown, pg_terminate_backend) cancels a reading under
 * way (db_worker.c) and ends the worker at the top of its loop, quietly,
 * with exit code 0: the sampler launches it again if the server is not
 * shutting down.
 *
 * A sweep (asked for by the sampler every pgsentinel_pgssh.sweep_interval,
 * with a sample's request) reads every statement and keeps, besides the
 * requested ones, those whose counters changed since the previous sweep: a
 * statement no sample sees gets a reading at least once a sweep while it
 * runs (docs/columns.md).  The worker remembers each statement's counters
 * in a hash table as large as pg_stat_statements; a statement it does not
 * know (the first sweep, an entry created since, after a failed reading or
 * a reset, which forget them all) is kept.  So that the deltas add up to
 * the calls, a kept reading may come with the one before it that the
 * history lacks (keep_swept()), and so that a sweep never overwrites
 * readings not archived yet, it keeps at most a quarter of the ring of
 * statements not asked for.
 *
 * A reading costs about 2 us per pg_stat_statements entry, whatever is
 * kept (pg_stat_statements(false) builds every entry).  So that a large
 * pg_stat_statements and a short sampling period can never make the worker
 * take a whole core, it rests after each reading for PGSSH_REST_FACTOR
 * times as long as the reading took (at most a tenth of a core; the rest is
 * timed on the monotonic clock and never longer than PGSSH_REST_MAX_MS).
 * Requests made meanwhile are merged by the sampler into the one taken next
 * (see pgssh_request.c), so a statement's final reading is delayed, not
 * lost; the rest ends early when that request is half full, and should it
 * fill up anyway the final readings that do not fit are counted
 * (statements.keys_dropped).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "portability/instr_time.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "db_worker.h"
#include "guc.h"
#include "pgsentinel.h"
#include "statements/pgssh.h"
#include "archive/archive.h"
#include "store/ring.h"

#define RECHECK_MS		5000
#define RECHECK_MIN_MS	200

/* rest after a reading, in multiples of its duration: <= 1/(1+9) of a core */
#define PGSSH_REST_FACTOR	9
#define PGSSH_REST_MAX_MS	10000

/* Columns read, in the order of the prepared query. */
enum
{
	COL_USERID, COL_DBID, COL_TOPLEVEL, COL_QUERYID, COL_CALLS, COL_ROWS,
	COL_PLANS, COL_SHARED_HIT, COL_SHARED_READ, COL_SHARED_DIRTIED,
	COL_SHARED_WRITTEN, COL_LOCAL_HIT, COL_LOCAL_READ, COL_LOCAL_DIRTIED,
	COL_LOCAL_WRITTEN, COL_TEMP_READ, COL_TEMP_WRITTEN, COL_WAL_RECORDS,
	COL_WAL_FPI, COL_WAL_BYTES, COL_EXEC_TIME, COL_PLAN_TIME,
	COL_BLK_READ_TIME, COL_BLK_WRITE_TIME, NUM_COLS
};

/* pg_stat_statements columns needed as they are named since version 1.8 */
static const char *const required_columns[] = {
	"userid", "dbid", "toplevel", "queryid", "calls", "rows", "plans",
	"shared_blks_hit", "shared_blks_read", "shared_blks_dirtied",
	"shared_blks_written", "local_blks_hit", "local_blks_read",
	"local_blks_dirtied", "local_blks_written", "temp_blks_read",
	"temp_blks_written", "wal_records", "wal_fpi", "wal_bytes",
	"total_exec_time", "total_plan_time"
};

static SPIPlanPtr read_plan = NULL;	/* the requested statements */
static SPIPlanPtr sweep_plan = NULL;	/* every statement */
static Oid	plans_nspid = InvalidOid;	/* the schema the plans name */
static NameData plans_schema;	/* and its name then */
static PgsshKey *keys = NULL;
static PgsshRow *batch = NULL;	/* rows of one reading */
static int	batch_size = 0;		/* rows batch has room for */

/*
 * What the worker remembers of a statement between sweeps: its counters as
 * last seen (last, stamped with the sample they were seen at: the reading
 * kept then, or a later sweep that found them unchanged), where its last
 * kept reading is in the statements ring, and the last sweep that saw it.
 */
typedef struct SweptKey
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	bool		toplevel;
} SweptKey;

typedef struct SweptEntry
{
	SweptKey	key;			/* hash key: first */
	PgsshRow	last;
	uint64		kept_at;		/* ring position of its last kept reading */
	uint64		sweep;
} SweptEntry;

static HTAB *swept = NULL;
static uint64 sweeps = 0;

/*
 * Whether the hash holds every statement of the previous sweep (none cut by
 * the ring's capacity or the sweep's budget), that sweep's sample, and the
 * reset the hash goes with (pgsentinel_reset() hides the readings it
 * refers to).
 */
static bool last_sweep_complete = false;
static int64 last_sweep_sample_id = 0;
static TimestampTz last_sweep_time = 0;
static uint64 swept_reset_count = 0;

/* Clear the worker's pid and latch when it exits. */
static void
pgssh_worker_exit(int code, Datum arg)
{
	(void) pgs_lock_exclusive();
	if (pgs_state->statements.pid == MyProcPid)
	{
		pgs_state->statements.pid = 0;
		pgs_state->statements.latch = NULL;
	}
	pgs_unlock_exclusive();
}

/* Does the text array of argument names contain name? */
static bool
has_column(Datum *names, int n, const char *name)
{
	int			i;

	for (i = 0; i < n; i++)
		if (strcmp(TextDatumGetCString(names[i]), name) == 0)
			return true;
	return false;
}

/*
 * Check the columns of pg_stat_statements, in schema nspid (InvalidOid: it
 * is not created in this database), and prepare the query.  Runs inside a
 * transaction with SPI connected; sets the state and returns false when
 * the history cannot run.
 */
static bool
prepare_read_plan(Oid nspid)
{
	Datum	   *names;
	int			nnames;
	bool		isnull;
	char	   *schema;
	const char *blk_read;
	const char *blk_write;
	StringInfoData sql;
	Oid			argtypes[1] = {INT8ARRAYOID};
	int			i;
	char		msg[PGS_MESSAGE_LEN];
	Oid			nsptype[1] = {OIDOID};
	Datum		nsparg[1] = {ObjectIdGetDatum(nspid)};

	if (SPI_execute_with_args("SELECT n.nspname, p.proargnames"
							  " FROM pg_catalog.pg_namespace n"
							  " JOIN pg_catalog.pg_proc p ON p.pronamespace = n.oid"
							  " WHERE n.oid = $1"
							  "   AND p.proname = 'pg_stat_statements'"
							  "   AND p.proargtypes = '16'::pg_catalog.oidvector",
							  1, nsptype, nsparg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up pg_stat_statements");
	if (SPI_processed == 0)
	{
		snprintf(msg, sizeof(msg),
				 "pg_stat_statements is not created in database \"%s\" (pgsentinel.db_name): run CREATE EXTENSION pg_stat_statements there",
				 pgs_db_name);
		pgssh_set_state(PGSSH_NOT_CREATED, msg);
		return false;
	}
	schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(SPI_tuptable->vals[0],
													   SPI_tuptable->tupdesc, 2,
													   &isnull)),
					  TEXTOID, -1, false, TYPALIGN_INT, &names, NULL, &nnames);

	for (i = 0; i < lengthof(required_columns); i++)
	{
		if (!has_column(names, nnames, required_columns[i]))
		{
			snprintf(msg, sizeof(msg),
					 "pg_stat_statements in database \"%s\" has no column \"%s\": update it with ALTER EXTENSION pg_stat_statements UPDATE",
					 pgs_db_name, required_columns[i]);
			pgssh_set_state(PGSSH_INCOMPATIBLE, msg);
			return false;
		}
	}
	/* renamed in pg_stat_statements 1.11 (PostgreSQL 17) */
	if (has_column(names, nnames, "shared_blk_read_time"))
	{
		blk_read = "shared_blk_read_time";
		blk_write = "shared_blk_write_time";
	}
	else if (has_column(names, nnames, "blk_read_time"))
	{
		blk_read = "blk_read_time";
		blk_write = "blk_write_time";
	}
	else
	{
		snprintf(msg, sizeof(msg),
				 "pg_stat_statements in database \"%s\" has neither blk_read_time nor shared_blk_read_time",
				 pgs_db_name);
		pgssh_set_state(PGSSH_INCOMPATIBLE, msg);
		return false;
	}

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (i = 0; i < lengthof(required_columns); i++)
	{
		if (strcmp(required_columns[i], "wal_bytes") == 0)
			appendStringInfoString(&sql, "least(wal_bytes, 9223372036854775807)::bigint, ");
		else
			appendStringInfo(&sql, "%s, ", required_columns[i]);
	}
	appendStringInfo(&sql, "%s, %s FROM %s.pg_stat_statements(false)",
					 blk_read, blk_write, quote_identifier(schema));

	sweep_plan = SPI_prepare(sql.data, 0, NULL);
	if (sweep_plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql.data,
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(sweep_plan);

	appendStringInfoString(&sql, " WHERE queryid = ANY ($1)");
	read_plan = SPI_prepare(sql.data, 1, argtypes);
	if (read_plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql.data,
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(read_plan);
	plans_nspid = nspid;
	namestrcpy(&plans_schema, schema);
	return true;
}

/* Is this (queryid, dbid) one of the n sorted keys? */
static bool
key_requested(const PgsshKey *k, int n, uint64 queryid, Oid dbid)
{
	int			lo = 0;
	int			hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		const PgsshKey *m = &k[mid];
		int			c;

		if (m->queryid != queryid)
			c = m->queryid < queryid ? -1 : 1;
		else if (m->dbid != dbid)
			c = m->dbid < dbid ? -1 : 1;
		else
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

/* int8 column of an SPI result row, 0 when NULL. */
static int64
col_int64(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col + 1, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

/* float8 column of an SPI result row, 0 when NULL. */
static double
col_float8(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col + 1, &isnull);

	return isnull ? 0.0 : DatumGetFloat8(d);
}

/*
 * Room for row n of the batch.  It grows as a reading needs it, up to the
 * ring's capacity, rather than being allocated at that size up front (up
 * to 10 GB at the largest setting); failing to grow is an error of this
 * reading, which is retried, not of the worker's start.
 */
static PgsshRow *
batch_row(int n)
{
	if (n >= batch_size)
	{
		int			size = Min(Max(batch_size * 2, 64),
						  (int) pgs_state->statements.ring.capacity);

		Assert(n < size);
		batch = batch == NULL ?
			MemoryContextAllocHuge(TopMemoryContext, sizeof(PgsshRow) * (Size) size) :
			repalloc_huge(batch, sizeof(PgsshRow) * (Size) size);
		batch_size = size;
	}
	return &batch[n];
}

/* The hash of swept statements, made when first needed. */
static HTAB *
swept_hash(void)
{
	if (swept == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(SweptKey);
		ctl.entrysize = sizeof(SweptEntry);
		ctl.hcxt = TopMemoryContext;
		swept = hash_create("pgsentinel swept statements", 1024, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	return swept;
}

/*
 * After a sweep: forget the statements it did not see (evicted from
 * pg_stat_statements, or reset), so that they are kept when seen again.
 */
static void
forget_unswept(void)
{
	HASH_SEQ_STATUS status;
	SweptEntry *e;

	if (swept == NULL)
		return;
	hash_seq_init(&status, swept);
	while ((e = hash_seq_search(&status)) != NULL)
		if (e->sweep != sweeps)
			(void) hash_search(swept, &e->key, HASH_REMOVE, NULL);
}

/*
 * Forget every statement (after a failed reading, or a reset): the next
 * sweep keeps them all, as the first one does.
 */
static void
forget_swept(void)
{
	if (swept != NULL)
		hash_destroy(swept);
	swept = NULL;
	last_sweep_complete = false;
}

/*
 * Forget the plans (after a failed reading, or pg_stat_statements dropped
 * or moved) and every statement swept: the next reading starts afresh.
 */
static void
forget_plans(void)
{
	if (read_plan != NULL)
		SPI_freeplan(read_plan);
	read_plan = NULL;
	if (sweep_plan != NULL)
		SPI_freeplan(sweep_plan);
	sweep_plan = NULL;
	plans_nspid = InvalidOid;
	forget_swept();
}

/* The counters of one row of the reading. */
static void
row_from_tuple(HeapTuple tup, TupleDesc desc, PgsshRow *r)
{
	bool		isnull;

	r->queryid = (uint64) col_int64(tup, desc, COL_QUERYID);
	r->userid = DatumGetObjectId(SPI_getbinval(tup, desc, COL_USERID + 1, &isnull));
	r->dbid = DatumGetObjectId(SPI_getbinval(tup, desc, COL_DBID + 1, &isnull));
	r->toplevel = DatumGetBool(SPI_getbinval(tup, desc, COL_TOPLEVEL + 1, &isnull));
	r->calls = col_int64(tup, desc, COL_CALLS);
	r->rows = col_int64(tup, desc, COL_ROWS);
	r->plans = col_int64(tup, desc, COL_PLANS);
	r->shared_blks_hit = col_int64(tup, desc, COL_SHARED_HIT);
	r->shared_blks_read = col_int64(tup, desc, COL_SHARED_READ);
	r->shared_blks_dirtied = col_int64(tup, desc, COL_SHARED_DIRTIED);
	r->shared_blks_written = col_int64(tup, desc, COL_SHARED_WRITTEN);
	r->local_blks_hit = col_int64(tup, desc, COL_LOCAL_HIT);
	r->local_blks_read = col_int64(tup, desc, COL_LOCAL_READ);
	r->local_blks_dirtied = col_int64(tup, desc, COL_LOCAL_DIRTIED);
	r->local_blks_written = col_int64(tup, desc, COL_LOCAL_WRITTEN);
	r->temp_blks_read = col_int64(tup, desc, COL_TEMP_READ);
	r->temp_blks_written = col_int64(tup, desc, COL_TEMP_WRITTEN);
	r->wal_records = col_int64(tup, desc, COL_WAL_RECORDS);
	r->wal_fpi = col_int64(tup, desc, COL_WAL_FPI);
	r->wal_bytes = col_int64(tup, desc, COL_WAL_BYTES);
	r->total_exec_time = col_float8(tup, desc, COL_EXEC_TIME);
	r->total_plan_time = col_float8(tup, desc, COL_PLAN_TIME);
	r->blk_read_time = col_float8(tup, desc, COL_BLK_READ_TIME);
	r->blk_write_time = col_float8(tup, desc, COL_BLK_WRITE_TIME);
}

/*
 * Keep the reading r of a sweep, with the reading before it when the
 * history would not have one: e's last counters when its last kept reading
 * is half a ring old (it may be overwritten before this one is archived:
 * a delta needs both in the ring), or zeros at the previous sweep for a
 * statement that did not exist then (the previous sweep saw every
 * statement).  Such a reading is stamped with the sample its counters were
 * true at, earlier than this one's: the deltas, ordered by time, take it as
 * the previous reading.  Returns the rows kept.
 */
static int
keep_swept(SweptEntry *e, const PgsshRow *r, bool zero_before, uint64 written, int n)
{
	int			kept = 0;

	if (e != NULL && written + n - e->kept_at > pgs_state->statements.ring.capacity / 2)
		*batch_row(n + kept++) = e->last;
	else if (e == NULL && zero_before)
	{
		PgsshRow   *z = batch_row(n + kept++);

		memset(z, 0, sizeof(PgsshRow));
		z->sample_id = last_sweep_sample_id;
		z->ash_time = last_sweep_time;
		z->queryid = r->queryid;
		z->userid = r->userid;
		z->dbid = r->dbid;
		z->toplevel = r->toplevel;
	}
	*batch_row(n + kept++) = *r;
	return kept;
}

/* The hash entry of r's statement: found (or NULL), or made (HASH_ENTER). */
static SweptEntry *
swept_entry(const PgsshRow *r, HASHACTION action)
{
	SweptKey	key;

	memset(&key, 0, sizeof(key));	/* the padding is hashed too */
	key.userid = r->userid;
	key.dbid = r->dbid;
	key.queryid = r->queryid;
	key.toplevel = r->toplevel;
	return hash_search(swept_hash(), &key, action, NULL);
}

/*
 * Remember r, just kept at ring position kept_at, as its statement's last
 * reading (e: its entry, NULL when it has none yet).
 */
static void
remember_kept(SweptEntry *e, const PgsshRow *r, uint64 kept_at)
{
	if (e == NULL)
		e = swept_entry(r, HASH_ENTER);
	e->last = *r;
	e->kept_at = kept_at;
	e->sweep = sweeps;
}

/*
 * Read the counters of the requested statements, and in a sweep those of
 * the statements that changed since the previous one, into batch.  Runs in
 * a transaction with SPI connected.  Returns the number of rows.
 *
 * A sweep keeps, besides the requested statements, those whose calls, plans
 * or execution time differ from what the hash remembers, and those it does
 * not know, at most a quarter of the ring's capacity of them: the rest wait
 * for the next sweep, so that no sweep (the first one keeps every
 * statement) overwrites readings not archived yet.
 *
 * While sweeps run (the previous one complete), a requested reading goes
 * through the same memory: a statement the previous sweep did not see gets
 * its zeros before its first reading, whichever reads it first.  A zero
 * written by a later sweep, after a sample's reading, would come before
 * that reading in time but after it in sample id, once the archive had
 * taken the reading without a delta (sql/archive_statements.sql).
 */
static int
read_counters(int nkeys, bool sweep, int64 sample_id, TimestampTz ash_time)
{
	uint64		capacity = pgs_state->statements.ring.capacity;
	uint64		written = pgs_ring_written(&pgs_state->statements.ring);
	int64		budget = (int64) (capacity / 4);
	uint64		resets;
	bool		complete = true;
	bool		zero_before;
	int			i;
	int			n = 0;
	TupleDesc	desc;

	resets = pg_atomic_read_u64(&pgs_state->reset.count);
	if (resets != swept_reset_count)
	{
		forget_swept();
		swept_reset_count = resets;
	}
	/* sweeps turned off forget too: their memory would grow stale */
	if (pgs_pgssh_sweep_interval_s <= 0 && !sweep)
		forget_swept();
	zero_before = last_sweep_complete;
	if (sweep)
	{
		sweeps++;
		if (SPI_execute_plan(sweep_plan, NULL, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read pg_stat_statements");
	}
	else
	{
		Datum	   *ids = palloc(sizeof(Datum) * nkeys);
		int			nids = 0;
		Datum		arg;

		for (i = 0; i < nkeys; i++)
			if (nids == 0 || DatumGetInt64(ids[nids - 1]) != (int64) keys[i].queryid)
				ids[nids++] = Int64GetDatum((int64) keys[i].queryid);
		arg = PointerGetDatum(construct_array(ids, nids, INT8OID, 8, true, TYPALIGN_DOUBLE));
		if (SPI_execute_plan(read_plan, &arg, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read pg_stat_statements");
	}
	desc = SPI_tuptable->tupdesc;
	for (i = 0; i < (int) SPI_processed; i++)
	{
		PgsshRow	r;
		bool		requested;
		SweptEntry *e;
		bool		changed;
		int			kept;

		row_from_tuple(SPI_tuptable->vals[i], desc, &r);
		r.sample_id = sample_id;
		r.ash_time = ash_time;
		requested = key_requested(keys, nkeys, r.queryid, r.dbid);
		if (!sweep && (!zero_before || !requested || n + 2 > (int) capacity))
		{
			if (requested && n < (int) capacity)
				*batch_row(n++) = r;
			continue;
		}

		e = swept_entry(&r, HASH_FIND);
		changed = e == NULL || e->last.calls != r.calls ||
			e->last.plans != r.plans ||
			e->last.total_exec_time != r.total_exec_time;
		if (!changed && !requested)
		{
			Assert(sweep);
			/* its counters are still those: true at this sample too */
			e->last.sample_id = sample_id;
			e->last.ash_time = ash_time;
			e->sweep = sweeps;
			continue;
		}
		if ((!requested && budget <= 0) || n + 2 > (int) capacity)
		{
			/* next sweep: it stays changed, or unknown */
			complete = false;
			if (e != NULL)
				e->sweep = sweeps;
			continue;
		}
		kept = keep_swept(e, &r, zero_before, written, n);
		n += kept;
		if (!requested)
			budget -= kept;
		remember_kept(e, &r, written + n - 1);
	}
	if (sweep)
	{
		forget_unswept();
		last_sweep_complete = complete;
		last_sweep_sample_id = sample_id;
		last_sweep_time = ash_time;
	}
	return n;
}

/*
 * Copy the batch into the statements ring, with the worker's timing.
 * Takes the lock exclusively: copies and stores only.
 */
static void
publish_rows(int n, int64 elapsed_us)
{
	Latch	   *wake_archiver;

	(void) pgs_lock_exclusive();
	pgs_ring_append(&pgs_state->statements.ring, batch, (uint64) n);
	pgs_state->statements.samples++;
	pgs_state->statements.last_us = elapsed_us;
	if (elapsed_us > pgs_state->statements.max_us)
		pgs_state->statements.max_us = elapsed_us;
	/* a quarter of the ring not archived yet */
	wake_archiver =
		pgs_archiver_wake_due(pgs_ring_written(&pgs_state->statements.ring),
							  pgs_state->statements.ring.capacity,
							  pgs_state->archiver.statements_head,
							  &pgs_state->archiver.statements_woken);
	pgs_unlock_exclusive();
	if (wake_archiver != NULL)
		SetLatch(wake_archiver);
}

/*
 * One unit of work in its own transaction: (re)check pg_stat_statements if
 * needed, then serve the request if there is one.  Errors are caught,
 * turned into a state, and the transaction is rolled back.  Returns true
 * when pg_stat_statements is usable.
 */
static bool
serve(bool have_request, int nkeys, bool sweep, int64 sample_id,
	  TimestampTz ash_time)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile bool ok = false;

	PG_TRY();
	{
		TimestampTz start = GetCurrentTimestamp();
		int			n = 0;

		Oid			pgss;
		Oid			nspid;
		char	   *schema;

		/*
		 * The plans name pg_stat_statements in its schema: locked while
		 * they run, and made again if it was dropped, moved or renamed
		 * since.
		 */
		nspid = pgs_db_work_begin("pg_stat_statements", &pgss);
		schema = get_namespace_name(nspid);
		if (read_plan != NULL &&
			(nspid != plans_nspid || schema == NULL ||
			 strcmp(schema, NameStr(plans_schema)) != 0))
			forget_plans();
		ok = read_plan != NULL || prepare_read_plan(nspid);
		if (ok && have_request)
			n = read_counters(nkeys, sweep, sample_id, ash_time);

		pgs_db_work_commit();

		if (ok)
		{
			char		msg[PGS_MESSAGE_LEN];

			snprintf(msg, sizeof(msg),
					 "reading pg_stat_statements in database \"%s\"", pgs_db_name);
			pgssh_set_state(PGSSH_OK, msg);
			if (have_request)
				publish_rows(n, GetCurrentTimestamp() - start);
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		char		msg[PGS_MESSAGE_LEN];

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		pgs_db_work_abort();
		forget_plans();
		/* a reading cancelled by SIGTERM did not fail: the worker exits */
		if (!ShutdownRequestPending)
		{
			snprintf(msg, sizeof(msg), "reading pg_stat_statements failed: %s",
					 edata->message);
			pgssh_set_state(PGSSH_FAILING, msg);
		}
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/* Sleep until a request, a signal, or timeout_ms. */
static void
wait_for_work(long timeout_ms)
{
	(void) WaitLatch(MyLatch,
					 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 timeout_ms, pgs_worker_wait_event());
	ResetLatch(MyLatch);
}

/* Entry point of the statements worker, launched by the sampler. */
void
pgsentinel_pgssh_main(Datum main_arg)
{
	uint64		last_seq;
	bool		usable = false;
	TimestampTz next_check = 0;
	TimestampTz last_check = 0;
	instr_time	rest_start;		/* resting since, see PGSSH_REST_FACTOR */
	int64		rest_us = 0;	/* for how long */

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, pgs_db_worker_sigterm);
	BackgroundWorkerUnblockSignals();

	/* the request a previous worker did not take is ours to serve */
	(void) pgs_lock_exclusive();
	pgs_state->statements.pid = MyProcPid;
	pgs_state->statements.latch = MyLatch;
	last_seq = pg_atomic_read_u64(&pgs_state->statements.request_taken_seq);
	pgs_unlock_exclusive();
	on_shmem_exit(pgssh_worker_exit, (Datum) 0);

	pgs_db_worker_connect("pgsentinel statements");

	keys = MemoryContextAlloc(TopMemoryContext,
							  sizeof(PgsshKey) *
							  pgs_state->statements.request_max_keys);
	pgs_prefault(pgs_pgssh_rows(),
				 sizeof(PgsshRow) *
				 (Size) pgs_state->statements.ring.capacity);

	for (;;)
	{
		uint64		seq;
		int			nkeys = 0;
		bool		sweep = false;
		int64		sample_id = 0;
		TimestampTz ash_time = 0;
		instr_time	start;
		instr_time	took;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(0);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!pgs_pgssh_enable)
			proc_exit(0);		/* the sampler launches us again when on */

		/* resting: leave the requests to be merged, take the newest later */
		if (usable && rest_us > 0)
		{
			instr_time	rested;
			int64		left;
			int			pending_keys;

			INSTR_TIME_SET_CURRENT(rested);
			INSTR_TIME_SUBTRACT(rested, rest_start);
			left = rest_us - (int64) INSTR_TIME_GET_MICROSEC(rested);
			LWLockAcquire(pgs_state->lock, LW_SHARED);
			pending_keys = pgs_state->statements.request_seq != last_seq ?
				pgs_state->statements.request_nkeys : 0;
			LWLockRelease(pgs_state->lock);
			if (left > 0 &&
				pending_keys < pgs_state->statements.request_max_keys / 2)
			{
				wait_for_work((long) ((left + 999) / 1000));
				continue;
			}
			rest_us = 0;
		}

		/* unusable: look again, sooner when requests wait; take none */
		if (!usable)
		{
			TimestampTz now = GetCurrentTimestamp();
			bool		pending;

			LWLockAcquire(pgs_state->lock, LW_SHARED);
			pending = pgs_state->statements.request_seq != last_seq;
			LWLockRelease(pgs_state->lock);
			if (now >= next_check ||
				(pending && now >= TimestampTzPlusMilliseconds(last_check, RECHECK_MIN_MS)))
			{
				last_check = now;
				usable = serve(false, 0, false, 0, 0);
				if (!usable)
					next_check = TimestampTzPlusMilliseconds(now, RECHECK_MS);
			}
			if (!usable)
			{
				wait_for_work(pending ? RECHECK_MIN_MS : RECHECK_MS);
				continue;
			}
		}

		/* copy the latest request out */
		(void) pgs_lock_exclusive();
		seq = pgs_state->statements.request_seq;
		if (seq != last_seq)
		{
			nkeys = pgs_state->statements.request_nkeys;
			memcpy(keys, pgs_request_keys(), sizeof(PgsshKey) * nkeys);
			sweep = pgs_state->statements.request_sweep;
			pgs_state->statements.request_sweep = false;
			sample_id = pgs_state->statements.request_sample_id;
			ash_time = pgs_state->statements.request_ash_time;
			if (seq > last_seq + 1)
				pgs_state->statements.requests_skipped += seq - last_seq - 1;
			pg_atomic_write_u64(&pgs_state->statements.request_taken_seq, seq);
		}
		pgs_unlock_exclusive();

		if (seq != last_seq && (nkeys > 0 || sweep))
		{
			INSTR_TIME_SET_CURRENT(start);
			usable = serve(true, nkeys, sweep, sample_id, ash_time);
			if (!usable)
				next_check = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 RECHECK_MS);
			else
			{
				INSTR_TIME_SET_CURRENT(rest_start);
				took = rest_start;
				INSTR_TIME_SUBTRACT(took, start);
				rest_us = Min((int64) INSTR_TIME_GET_MICROSEC(took) * PGSSH_REST_FACTOR,
							  (int64) PGSSH_REST_MAX_MS * 1000);
			}
		}
		last_seq = seq;

		wait_for_work(1000L);
	}
}
