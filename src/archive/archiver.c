/*-------------------------------------------------------------------------
 *
 * archiver.c
 *		The archiver worker: every pgsentinel_archive.interval it copies the
 *		samples the rings took since the last time into the archive tables
 *		of the extension in pgsentinel.db_name (archive_step.c), then the
 *		readings of the statements history (archive_statements.c), creates
 *		the partitions ahead and drops those past their retention.
 *
 * The sampler launches it (pgs_archiver_supervise, db_worker.c) while
 * pgsentinel_archive.enable is on, and again if it exits.  It waits, without
 * writing, while the extension is not created (or older than 2.1) in that
 * database and while the server is in recovery: a standby's ring works as
 * on a primary and the primary archives; after a promotion the next cycle
 * archives.  Each cycle is one transaction for the partitions and one per
 * step of at most ARCHIVE_STEP_SAMPLES samples, so that a long catch-up
 * commits as it goes.  An error (a lock held on an archive table past
 * lock_timeout, a full disk, a trigger refusing the rows) rolls back the
 * step -- rows and watermark together -- and is shown by
 * pgsentinel_status() with its remedy; the next cycle tries again from the
 * same watermark, as far back as the ring still holds.
 *
 * SIGTERM cancels the step under way, rolled back whole, and ends the worker
 * quietly (exit code 0), as the statements worker (db_worker.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "archive/archive.h"
#include "compat.h"
#include "db_worker.h"
#include "fleet/fleet.h"
#include "guc.h"
#include "pgsentinel.h"
#include "store/ash_rows.h"
#include "store/ring.h"

/* Samples archived per transaction, at most. */
#define ARCHIVE_STEP_SAMPLES	3600
/* Steps per cycle, at most: the rest waits for the next cycle. */
#define ARCHIVE_MAX_STEPS		20
/* The size of the archive is measured at most this often. */
#define ARCHIVE_SIZE_EVERY_MS	(60 * 1000)
/* Partitions are looked after at most this often (and at start). */
#define ARCHIVE_PARTITIONS_EVERY_MS	(10 * 60 * 1000)
/* Expired partitions in use are tried again this often. */
#define ARCHIVE_BUSY_RETRY_MS	(60 * 1000)
/* Shorter than the default 1 s: the archiver detects a deadlock first. */
#define ARCHIVE_DEADLOCK_TIMEOUT "100ms"
/*
 * At most this long apart: a repository's fleet ticks; the tries while
 * samples archiving was asked for are held back; and the first try after a
 * failed archiving (or before the extension exists), the next ones twice
 * as far apart each, up to the interval
 */
#define FLEET_TICK_MS			(5 * 1000)

/* The sampler's view of the worker. */
static PgsWorkerLauncher launcher = {
	"pgsentinel_archiver_main", "pgsentinel archiver"
};

/* pgsentinel_status()'s word for a state. */
const char *
pgs_archive_state_name(int state)
{
	switch ((PgsArchiveState) state)
	{
		case PGS_ARCHIVE_DISABLED:
			return "disabled";
		case PGS_ARCHIVE_STARTING:
			return "starting";
		case PGS_ARCHIVE_NOT_CONNECTED:
			return "not connected";
		case PGS_ARCHIVE_NOT_CREATED:
			return "not created";
		case PGS_ARCHIVE_STANDBY:
			return "standby";
		case PGS_ARCHIVE_FAILING:
			return "failing";
		case PGS_ARCHIVE_OK:
			return "ok";
	}
	return "unknown";
}

/*
 * Set the state and its message; a change of either is logged once, so
 * that a DBA finds in the log why the archive stopped and how it resumed.
 */
static void
set_state(PgsArchiveState state, const char *message)
{
	bool		changed;

	(void) pgs_lock_exclusive();
	changed = pgs_state->archiver.state != (int) state ||
		strncmp(pgs_state->archiver.message, message,
				PGS_MESSAGE_LEN - 1) != 0;
	pgs_state->archiver.state = (int) state;
	strlcpy(pgs_state->archiver.message, message, PGS_MESSAGE_LEN);
	pgs_unlock_exclusive();
	if (changed)
		ereport(LOG,
				(errmsg("pgsentinel archiver: %s", message)));
}

static PgsArchiveState
current_state(void)
{
	PgsArchiveState state;

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	state = (PgsArchiveState) pgs_state->archiver.state;
	LWLockRelease(pgs_state->lock);
	return state;
}

/*
 * Called by the sampler after each sample: keep the archiver running while
 * it is enabled.  A worker that exits while starting could not connect.
 */
void
pgs_archiver_supervise(void)
{
	PgsArchiveState state = current_state();

	if (!pgs_archive_enable)
	{
		if (state != PGS_ARCHIVE_DISABLED)
			set_state(PGS_ARCHIVE_DISABLED,
					  "disabled by pgsentinel_archive.enable = off");
		return;					/* a running worker exits by itself */
	}
	switch (pgs_supervise_db_worker(&launcher, state == PGS_ARCHIVE_OK))
	{
		case PGS_LAUNCH_RUNNING:
		case PGS_LAUNCH_WAITING:
			return;
		case PGS_LAUNCH_EXITED:
			/* it exited while connecting */
			if (state == PGS_ARCHIVE_STARTING)
			{
				char		msg[PGS_MESSAGE_LEN];

				snprintf(msg, sizeof(msg),
						 "could not connect to database \"%s\" (pgsentinel.db_name): create it, or allow connections to it",
						 pgs_db_name);
				set_state(PGS_ARCHIVE_NOT_CONNECTED, msg);
			}
			return;
		case PGS_LAUNCH_NO_SLOT:
			set_state(PGS_ARCHIVE_NOT_CONNECTED,
					  "no background worker slot is free for the archiver: raise max_worker_processes");
			return;
		case PGS_LAUNCH_LAUNCHED:
			break;
	}
	if (state != PGS_ARCHIVE_NOT_CONNECTED)
		set_state(PGS_ARCHIVE_STARTING, "starting");
}

/* Clear archiver.pid when the worker exits. */
static void
archiver_exit(int code, Datum arg)
{
	if (pgs_state == NULL)
		return;
	(void) pgs_lock_exclusive();
	if (pgs_state->archiver.pid == MyProcPid)
	{
		pgs_state->archiver.pid = 0;
		pgs_state->archiver.latch = NULL;
		pgs_state->archiver.waiting[0] = '\0';
	}
	pgs_unlock_exclusive();
}

/*
 * Is the extension extoid, locked in schema ns by pgs_db_work_begin(),
 * created here with its archive?  The state and message say when not.  An
 * extension created anew since the last cycle needs its partitions.  The
 * schema's name is allocated in cxt.
 */
static bool
find_archive(Oid extoid, Oid ns, char **schema, bool *partitions_due,
			 MemoryContext cxt)
{
	static Oid	last_extoid = InvalidOid;
	char		msg[PGS_MESSAGE_LEN];

	if (!OidIsValid(extoid))
	{
		snprintf(msg, sizeof(msg),
				 "pgsentinel is not created in database \"%s\" (pgsentinel.db_name): run CREATE EXTENSION pgsentinel there",
				 pgs_db_name);
		set_state(PGS_ARCHIVE_NOT_CREATED, msg);
		return false;
	}
	if (!OidIsValid(get_relname_relid("pgsentinel_archive_state", ns)))
	{
		snprintf(msg, sizeof(msg),
				 "pgsentinel in database \"%s\" has no archive (older than 2.1.0): run ALTER EXTENSION pgsentinel UPDATE there",
				 pgs_db_name);
		set_state(PGS_ARCHIVE_NOT_CREATED, msg);
		return false;
	}
	/* created again: its partitions are to be created again */
	if (extoid != last_extoid)
		*partitions_due = true;
	last_extoid = extoid;
	/* kept across the cycle's transactions */
	*schema = MemoryContextStrdup(cxt, get_namespace_name(ns));
	return true;
}

/*
 * Begin a later transaction of the cycle, on the extension find_archive()
 * found in an earlier one (in schema nspid, named schema), locked again:
 * an error if it was dropped or its schema renamed meanwhile (the next
 * cycle looks for it again).
 */
static void
archive_work_begin(Oid extoid, Oid nspid, const char *schema)
{
	Oid			now_extoid;
	Oid			now_nspid = pgs_db_work_begin(PGS_NAME, &now_extoid);
	char	   *now_schema = get_namespace_name(now_nspid);

	if (now_extoid != extoid || now_nspid != nspid || now_schema == NULL ||
		strcmp(now_schema, schema) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pgsentinel was dropped, or its schema renamed, while the archiver worked")));
}

/* The remedy of an archiving error, by its SQLSTATE. */
static const char *
remedy(int sqlerrcode)
{
	switch (sqlerrcode)
	{
		case ERRCODE_LOCK_NOT_AVAILABLE:
			return "a lock on pgsentinel or an archive table was held too long; the archiver tries again";
		case ERRCODE_DISK_FULL:
			return "free disk space, or lower pgsentinel_archive.retention";
		case ERRCODE_INSUFFICIENT_PRIVILEGE:
			return "the archive tables must stay writable by the archiver (a superuser)";
		case ERRCODE_UNDEFINED_TABLE:
		case ERRCODE_UNDEFINED_COLUMN:
		case ERRCODE_UNDEFINED_FUNCTION:
			return "an archive object is missing: ALTER EXTENSION pgsentinel UPDATE, or drop and create the extension";
		case ERRCODE_READ_ONLY_SQL_TRANSACTION:
			return "the database is read-only (default_transaction_read_only)";
		default:
			return "the archiver tries again at each interval; the ring keeps what is not archived yet";
	}
}

/*
 * The time of the oldest sample the rings hold, to create the partitions
 * a catch-up needs; 0 if none.
 */
static TimestampTz
oldest_ring_sample(void)
{
	PgsQueryBounds bounds;
	PgsRingCursor cursor;
	const PgsSampleRow *s;
	TimestampTz t = 0;

	pgs_ring_query_bounds(&pgs_state->sampler.samples, CurrentMemoryContext,
						  &bounds);
	pgs_ring_cursor_open(&cursor, &pgs_state->sampler.samples, bounds.first,
						 Min(bounds.first + 1, bounds.end));
	s = pgs_ring_cursor_next(&cursor);
	if (s != NULL)
		t = s->sample_time;
	pfree(cursor.chunk);
	return t;
}

/* The bytes of the archive's tables (partitions and indexes included). */
static int64
archive_bytes(Oid nspid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		isnull;
	int64		bytes;

	args[0] = ObjectIdGetDatum(nspid);
	if (SPI_execute_with_args("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::int8"
							  "  FROM pg_class c"
							  " WHERE c.relnamespace = $1 AND c.relkind = 'r'"
							  "   AND (c.relname LIKE 'pgsentinel\\_archive\\_%'"
							  "        OR c.relname LIKE 'pgsentinel\\_rollup\\_%')",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		return -1;
	bytes = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 1, &isnull));
	return bytes;
}

/*
 * One cycle.  Returns false when it could not archive (the state says
 * why).  After a partitions pass that left expired partitions in use,
 * *busy_retry is when to try them again (0 otherwise).  *more: the ring
 * still holds samples to archive (the cycle stopped after its most
 * steps).  *held_from: the first sample the last step held back for its
 * rows' query ids (0 if none).
 */
static bool
archive_cycle(bool *partitions_due, TimestampTz *busy_retry,
			  TimestampTz *size_due, uint64 *statements_written, bool *more,
			  int64 *held_from)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	/* what outlives the cycle's transactions, freed whatever happens */
	MemoryContext cycle_cxt = AllocSetContextCreate(TopMemoryContext,
													"pgsentinel archive cycle",
													ALLOCSET_SMALL_SIZES);
	volatile bool ok = false;

	PG_TRY();
	{
		Oid			extoid;
		Oid			nspid;
		char	   *schema;
		char	   *quoted;
		int			steps = 0;
		PgsArchiveStepResult r;
		TimestampTz start = GetCurrentTimestamp();
		TimestampTz oldest_kept = pgs_archive_oldest_kept();
		bool		found;

		nspid = pgs_db_work_begin(PGS_NAME, &extoid);
		if (RecoveryInProgress())
		{
			set_state(PGS_ARCHIVE_STANDBY,
					  "standby: the primary archives");
			pgs_db_work_commit();
			ok = false;
		}
		else if (!(found = find_archive(extoid, nspid, &schema, partitions_due,
									 cycle_cxt)))
		{
			pgs_db_work_commit();
			ok = false;
		}
		else
		{
			/* partitions: the day of the oldest sample the ring holds on */
			if (*partitions_due)
			{
				TimestampTz from = oldest_ring_sample();
				TimestampTz statements_from = pgs_archive_statements_oldest();
				int			dropped;
				int			busy;
				int			create_busy;
				int			created;
				char		waiting[PGS_MESSAGE_LEN];

				/* (an extension created again, an error): step anyway */
				*statements_written = PG_UINT64_MAX;

				/* the statements ring may reach further back */
				if (statements_from != 0 && (from == 0 || statements_from < from))
					from = statements_from;
				pgstat_report_activity(STATE_RUNNING, "pgsentinel archive partitions");
				created = pgs_archive_partitions(schema, nspid,
												 Max(from == 0 ? start : from,
													 oldest_kept),
												 &dropped, &busy,
												 &create_busy, waiting);
				*busy_retry = busy == 0 && create_busy == 0 ? 0 :
					TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												ARCHIVE_BUSY_RETRY_MS);
				(void) pgs_lock_exclusive();
				strlcpy(pgs_state->archiver.waiting, waiting, PGS_MESSAGE_LEN);
				pgs_unlock_exclusive();
				if (created > 0 || dropped > 0 || busy > 0 || create_busy > 0)
					ereport(DEBUG1,
							(errmsg("pgsentinel archiver created %d and dropped %d partitions, %d to make and %d to drop in use left for later",
									created, dropped, create_busy, busy)));
			}
			pgs_db_work_commit();
			*partitions_due = false;

			quoted = MemoryContextStrdup(cycle_cxt, quote_identifier(schema));
			memset(&r, 0, sizeof(r));
			do
			{
				char		lock_sql[NAMEDATALEN * 2 + 64];
				/* the texts this step can read are those written before */
				uint64		text_head =
					pg_atomic_read_u64(&pgs_state->text.head);
				uint64		ash_head =
					pgs_ring_written(&pgs_state->sampler.ash);

				archive_work_begin(extoid, nspid, schema);
				pgstat_report_activity(STATE_RUNNING, "pgsentinel archive step");
				/* one step at a time: a manual one waits for ours */
				snprintf(lock_sql, sizeof(lock_sql),
						 "LOCK TABLE %s.pgsentinel_archive_state IN SHARE ROW EXCLUSIVE MODE",
						 quoted);
				SPI_execute(lock_sql, false, 0);
				pgs_archive_step(schema, pgs_archive_keep_one_in,
								 ARCHIVE_STEP_SAMPLES, oldest_kept, &r);
				if (GetCurrentTimestamp() >= *size_due)
				{
					int64		bytes = archive_bytes(nspid);

					(void) pgs_lock_exclusive();
					pgs_state->archiver.bytes = bytes;
					pgs_unlock_exclusive();
					*size_due = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															ARCHIVE_SIZE_EVERY_MS);
				}
				pgs_db_work_commit();

				(void) pgs_lock_exclusive();
				pgs_state->archiver.samples += r.samples_kept;
				pgs_state->archiver.samples_skipped +=
					r.samples_seen - r.samples_kept;
				pgs_state->archiver.rows += r.rows;
				pgs_state->archiver.samples_lost += r.samples_lost;
				pgs_state->archiver.rows_lost += r.rows_lost;
				if (r.last_sample_time != 0)
					pgs_state->archiver.last_sample_time = r.last_sample_time;
				pgs_state->archiver.text_head = text_head;
				pgs_state->archiver.ash_head = ash_head;
				pgs_state->archiver.last_time = GetCurrentTimestamp();
				pgs_unlock_exclusive();
			} while (r.more && ++steps < ARCHIVE_MAX_STEPS &&
					 !ShutdownRequestPending);
			*more = r.more;
			*held_from = r.held_from;

			/*
			 * The statements history, with its own watermark, in a
			 * transaction of its own: its rows and watermark commit together,
			 * and the samples archived above stay archived if it fails.  The
			 * step reads the whole statements ring (a reading's previous one
			 * may be anywhere in it): it runs only when the ring has rows
			 * written since the last step committed.
			 */
			if (pgs_ring_written(&pgs_state->statements.ring) !=
				*statements_written)
			{
				char		lock_sql[NAMEDATALEN * 2 + 64];
				PgsArchiveStatementsResult sr;

				archive_work_begin(extoid, nspid, schema);
				pgstat_report_activity(STATE_RUNNING, "pgsentinel archive statements");
				snprintf(lock_sql, sizeof(lock_sql),
						 "LOCK TABLE %s.pgsentinel_archive_state IN SHARE ROW EXCLUSIVE MODE",
						 quoted);
				SPI_execute(lock_sql, false, 0);
				pgs_archive_statements_step(schema, oldest_kept, &sr);
				pgs_db_work_commit();
				*statements_written = sr.ring_written;
				(void) pgs_lock_exclusive();
				pgs_state->archiver.statements_head = sr.ring_written;
				pgs_unlock_exclusive();
			}

			{
				char		msg[PGS_MESSAGE_LEN];

				snprintf(msg, sizeof(msg),
						 "archiving into schema \"%s\" of database \"%s\"",
						 schema, pgs_db_name);
				set_state(PGS_ARCHIVE_OK, msg);
			}
			(void) pgs_lock_exclusive();
			pgs_state->archiver.last_us = GetCurrentTimestamp() - start;
			pgs_unlock_exclusive();
			ok = true;
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
		/* a step cancelled by SIGTERM did not fail: the worker exits */
		if (!ShutdownRequestPending)
		{
			snprintf(msg, sizeof(msg), "archiving failed: %s (%s)",
					 edata->message, remedy(edata->sqlerrcode));
			set_state(PGS_ARCHIVE_FAILING, msg);
		}
		FreeErrorData(edata);
		*partitions_due = true;
		ok = false;
	}
	PG_END_TRY();
	MemoryContextDelete(cycle_cxt);
	return ok;
}

/*
 * Called by an area's writer under the exclusive lock, after writing: the
 * archiver's latch to set (after releasing the lock) when a quarter of the
 * area (size, in the units of written) has been written since the
 * archiver's last step (head) and since the writer last woke it (*woken,
 * moved on), else NULL.
 */
Latch *
pgs_archiver_wake_due(uint64 written, uint64 size, uint64 head, uint64 *woken)
{
	uint64		quarter = Max(size / 4, 1);

	if (pgs_state->archiver.latch == NULL ||
		written - head < quarter || written - *woken < quarter)
		return NULL;
	*woken = written;
	pgs_state->archiver.wake = true;
	return pgs_state->archiver.latch;
}

/* Entry point of the archiver, launched by the sampler. */
void
pgsentinel_archiver_main(Datum main_arg)
{
	bool		partitions_due = true;
	TimestampTz partitions_at = 0;
	TimestampTz busy_retry = 0;
	TimestampTz size_due = 0;
	/* the statements ring's rows written as of the last statements step */
	uint64		statements_written = PG_UINT64_MAX;
	TimestampTz archive_at = 0;
	bool		woken;
	bool		reloaded = false;
	int64		wait_ms;
	int			retry_ms = FLEET_TICK_MS;
	/* the newest sample when archiving was last asked for (0: none) */
	int64		asked_upto = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, pgs_db_worker_sigterm);
	BackgroundWorkerUnblockSignals();

	(void) pgs_lock_exclusive();
	pgs_state->archiver.pid = MyProcPid;
	pgs_state->archiver.latch = MyLatch;
	pgs_state->archiver.text_head = pg_atomic_read_u64(&pgs_state->text.head);
	pgs_state->archiver.ash_head = pgs_ring_written(&pgs_state->sampler.ash);
	pgs_state->archiver.statements_head =
		pgs_ring_written(&pgs_state->statements.ring);
	pgs_unlock_exclusive();
	on_shmem_exit(archiver_exit, (Datum) 0);

	pgs_db_worker_connect("pgsentinel archiver");

	/*
	 * A step handles a few hundred rows, but the planner cannot know how
	 * many the rings return, and JIT-compiled its statement: 190 ms of a
	 * 220 ms step at 50 sessions.
	 */
	pgs_db_worker_set("jit", "off");
	/* in a deadlock with DDL on the archive (DROP EXTENSION), we give way */
	pgs_db_worker_set("deadlock_timeout", ARCHIVE_DEADLOCK_TIMEOUT);

	for (;;)
	{
		TimestampTz now;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(0);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			partitions_due = true;	/* retention may have changed */
			archive_at = 0;		/* and the interval: archive now */
			reloaded = true;
		}
		if (!pgs_archive_enable)
			proc_exit(0);		/* the sampler launches us again when on */

		now = GetCurrentTimestamp();
		if (now >= TimestampTzPlusMilliseconds(partitions_at,
											   ARCHIVE_PARTITIONS_EVERY_MS))
		{
			partitions_due = true;
			partitions_at = now;
		}
		if (busy_retry != 0 && now >= busy_retry)
			partitions_due = true;

		/*
		 * Archive every interval, or when woken (pgs_archiver_wake_due():
		 * texts or ring rows about to be overwritten; a reload sets
		 * archive_at back): each archiving writes one batch, so
		 * the interval is what a batch spans.  A repository's fleet ticks on
		 * a shorter period of its own (fleet.c): its pulls are due every
		 * pull_interval, whatever the batches' length.
		 */
		(void) pgs_lock_exclusive();
		woken = pgs_state->archiver.wake;
		pgs_state->archiver.wake = false;
		if (woken || reloaded)
			asked_upto = Max(asked_upto, pgs_state->sampler.last_sample_id);
		pgs_unlock_exclusive();
		reloaded = false;
		if (woken || now >= archive_at)
		{
			bool		more = false;
			int64		held_from = 0;
			bool		ok = archive_cycle(&partitions_due, &busy_retry,
										   &size_due, &statements_written,
										   &more, &held_from);

			/*
			 * A backlog left goes on at once (the ring's writers wake us only
			 * for what they write after our last step); what failed, or
			 * found no extension yet, is tried again soon, then less often.
			 * Samples held back for their rows' query ids are archived with
			 * the next interval's batch, unless archiving was asked for (a
			 * wake, a reload) after they were taken: then tried again every
			 * FLEET_TICK_MS until their hold ends (their rows complete, or
			 * PGS_ARCHIVE_HOLD_MAX_MS has passed).
			 */
			now = GetCurrentTimestamp();
			if (ok)
			{
				retry_ms = FLEET_TICK_MS;
				archive_at = more ? now :
					TimestampTzPlusMilliseconds(now, pgs_archive_interval_ms);
				if (held_from != 0 && held_from <= asked_upto)
					archive_at = Min(archive_at,
									 TimestampTzPlusMilliseconds(now, FLEET_TICK_MS));
				else if (!more)
					asked_upto = 0;
			}
			else
			{
				archive_at = TimestampTzPlusMilliseconds(now,
														 Min(retry_ms, pgs_archive_interval_ms));
				retry_ms = Min(retry_ms * 2, pgs_archive_interval_ms);
			}
		}
		if (!ShutdownRequestPending)
			pgs_fleet_tick();

		/* (rounded up: a wait of 0 would run the loop once for nothing) */
		now = GetCurrentTimestamp();
		wait_ms = Min((int64) Min(pgs_archive_interval_ms, FLEET_TICK_MS),
					  Max((int64) 0, (archive_at - now + 999) / 1000));
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait_ms, pgs_worker_wait_event());
		ResetLatch(MyLatch);
	}
}
