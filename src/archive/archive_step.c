/*-------------------------------------------------------------------------
 *
 * archive_step.c
 *		What the archiver does in the database, through SPI: one step
 *		copies the samples after the watermark from the rings into the
 *		archive tables and moves the watermark, in one statement; the
 *		partitions are created ahead and dropped after their retention.
 *
 * The statements are the extension's (sql-src/archive/31_archive_step.sql
 * says what they do and why they are exactly once); this file runs them,
 * and takes the locks that partitions need without stalling the archive.
 *
 * The SQL runs with search_path = pg_catalog, pg_temp, set for the
 * transaction, and names the extension's objects with its schema: nothing
 * a role may create in that schema is ever resolved instead of core's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "archive/archive.h"
#include "db_worker.h"
#include "guc.h"
#include "pgsentinel.h"
#include "sample/sampler.h"

/*
 * The text of the statement that the extension's template function fn
 * returns, formatted with the schema's name and arg (NULL if the template
 * takes none): %1$I and %2$s in the template.  schema is the name, not
 * quoted.  Allocated in the current memory context.
 */
char *
pgs_archive_template(const char *schema, const char *fn, const char *arg)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	char	   *sql;
	bool		isnull;
	Datum		d;

	sql = psprintf("SELECT pg_catalog.format(%s.%s(), $1, $2)",
				   quote_identifier(schema), fn);
	args[0] = CStringGetTextDatum(schema);
	args[1] = CStringGetTextDatum(arg != NULL ? arg : "");
	if (SPI_execute_with_args(sql, 2, argtypes, args, NULL, true, 1) !=
		SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pgsentinel archive: could not read %s()", fn);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "pgsentinel archive: %s() returned NULL", fn);
	pfree(sql);
	return TextDatumGetCString(d);
}

/*
 * Run a step's statement (a template formatted with the schema) with its
 * arguments, planned once and kept: planning the archiving step's statement,
 * some fifty common table expressions, took most of a step's time (about
 * 18 ms of 20 at the regression suite's settings).  The plan is generic (its
 * arguments are limits and times whose values do not change its shape), made
 * again when the text changes (the extension updated), and re-planned by PostgreSQL's plan cache when a relation or
 * function it uses changes (a partition attached or dropped, the extension
 * dropped and created again).  plan_cache_mode = force_custom_plan, set
 * for the database, overrides the generic plan: the step is then planned
 * at every run, as it was before.  Returns what SPI_execute_plan() returns.
 */
int
pgs_archive_execute(PgsArchivePlan *cache, const char *sql, int nargs,
					Oid *argtypes, Datum *args)
{
	if (cache->plan == NULL || strcmp(cache->sql, sql) != 0)
	{
		SPIPlanPtr	plan;

		if (cache->plan != NULL)
			SPI_freeplan(cache->plan);
		cache->plan = NULL;
		if (cache->sql != NULL)
			pfree(cache->sql);
		cache->sql = NULL;
		plan = SPI_prepare_cursor(sql, nargs, argtypes, CURSOR_OPT_GENERIC_PLAN);
		if (plan == NULL)
			elog(ERROR, "pgsentinel archive: could not prepare a step: %s",
				 SPI_result_code_string(SPI_result));
		cache->sql = MemoryContextStrdup(TopMemoryContext, sql);
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "pgsentinel archive: could not keep a step's plan");
		cache->plan = plan;
	}
	return SPI_execute_plan(cache->plan, args, NULL, false, 1);
}

/*
 * The first sample the step may not take yet: the oldest with rows waiting
 * for their query id, while it is younger than PGS_ARCHIVE_HOLD_MAX_MS, or else
 * the next sample: one published after this reading may have such rows.
 * *held is that oldest waiting sample when it holds the step back, else 0.
 */
static int64
archive_hold_before(int64 *held)
{
	int64		id;
	int64		next;
	TimestampTz time;

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	id = pgs_state->sampler.pending_sample_id;
	time = pgs_state->sampler.pending_sample_time;
	next = pgs_state->sampler.last_sample_id + 1;
	LWLockRelease(pgs_state->lock);
	*held = 0;
	if (id > 0 &&
		time > TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   -PGS_ARCHIVE_HOLD_MAX_MS))
	{
		*held = id;
		return id;
	}
	return next;
}

/*
 * Run one step (pgsentinel_archive_step_sql()): archive at most max_samples
 * samples after the watermark.  The caller holds a transaction, is
 * connected to SPI and has set the search path to pg_catalog, pg_temp.
 * schema is the name, not quoted.  Fills *result.
 */
void
pgs_archive_step(const char *schema, int keep_one_in, int max_samples,
				 TimestampTz oldest_kept, PgsArchiveStepResult *result)
{
	static PgsArchivePlan step_plan;
	char	   *sql;
	Oid			argtypes[4] = {INT4OID, INT4OID, TIMESTAMPTZOID, INT8OID};
	Datum		args[4];
	bool		isnull;
	int			ret;
	HeapTuple	tup;
	TupleDesc	desc;

	sql = pgs_archive_template(schema, "pgsentinel_archive_step_sql", NULL);
	args[0] = Int32GetDatum(keep_one_in);
	args[1] = Int32GetDatum(max_samples);
	args[2] = TimestampTzGetDatum(oldest_kept);
	args[3] = Int64GetDatum(archive_hold_before(&result->held_from));
	ret = pgs_archive_execute(&step_plan, sql, 4, argtypes, args);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pgsentinel archive step: unexpected result %d", ret);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	result->samples_seen = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	result->samples_kept = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
	result->rows = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	result->samples_lost = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	result->rows_lost = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	result->more = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
	result->last_sample_time =
		DatumGetTimestampTz(SPI_getbinval(tup, desc, 7, &isnull));
	if (isnull)
		result->last_sample_time = 0;
	pfree(sql);
}

/* A DROP run_drop_ddl() runs, and what it must lock first. */
typedef struct DropDdl
{
	char	   *ddl;
	Oid			locks[3];		/* the partition, its parent, the DEFAULT */
} DropDdl;

/*
 * Run each DROP pgsentinel_archive_partitions_expired() returns (args: its
 * arguments; schema: the name, not quoted), if the partition, its parent and the
 * parent's DEFAULT partition (if any: a DROP locks it too) can be locked at
 * once; it is left for a later call otherwise, and *skipped counts those
 * left.  Waiting for one while holding another could deadlock with a
 * session inserting into both parents, and the exclusive lock a DROP waits
 * for would queue every reader behind the longest one.  Returns the
 * partitions dropped; *busy_rel is the first relation that could not be
 * locked (unchanged if none).
 */
static int
run_drop_ddl(const char *schema, Datum *args, int *skipped, Oid *busy_rel)
{
	Oid			argtypes[4] = {DATEOID, DATEOID, DATEOID, OIDOID};
	char	   *sql;
	DropDdl    *todo;
	uint64		ntodo;
	int			run = 0;
	uint64		i;

	sql = psprintf("SELECT * FROM %s.pgsentinel_archive_partitions_expired($1, $2, $3, $4)",
				   quote_identifier(schema));
	if (SPI_execute_with_args(sql, 4, argtypes, args, NULL, true, 0) !=
		SPI_OK_SELECT)
		elog(ERROR, "pgsentinel archive partitions: could not list the expired ones");
	/* copied out: running a statement frees SPI_tuptable */
	ntodo = SPI_processed;
	todo = palloc0(sizeof(DropDdl) * Max(ntodo, 1));
	for (i = 0; i < ntodo; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			j;

		todo[i].ddl = SPI_getvalue(tuple, desc, 1);
		for (j = 0; j < 3; j++)
		{
			todo[i].locks[j] =
				DatumGetObjectId(SPI_getbinval(tuple, desc, j + 2, &isnull));
			if (isnull)
				todo[i].locks[j] = InvalidOid;
		}
	}
	*skipped = 0;
	for (i = 0; i < ntodo; i++)
	{
		int			got;

		/*
		 * The partition first: an exclusive lock is logged for standbys,
		 * which hold it to the commit even if released here, and the old
		 * partition is the one no standby reader minds.
		 */
		for (got = 0; got < 3; got++)
			if (OidIsValid(todo[i].locks[got]) &&
				!ConditionalLockRelationOid(todo[i].locks[got], AccessExclusiveLock))
				break;
		if (got < 3)
		{
			if (!OidIsValid(*busy_rel))
				*busy_rel = todo[i].locks[got];
			while (--got >= 0)
				if (OidIsValid(todo[i].locks[got]))
					UnlockRelationOid(todo[i].locks[got], AccessExclusiveLock);
			(*skipped)++;
			continue;
		}
		if (SPI_execute(todo[i].ddl, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "pgsentinel archive partitions: unexpected result running \"%s\"",
				 todo[i].ddl);
		run++;
	}
	pfree(todo);
	return run;
}

/*
 * Who holds a lock on relation rel, in words for pgsentinel_status(): the
 * oldest transaction of another backend holding it.  Written into buf.
 */
static void
describe_holder(Oid rel, char *buf, size_t len)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];

	args[0] = ObjectIdGetDatum(rel);
	if (SPI_execute_with_args("SELECT format('%s is in use by pid %s (role %s, in a transaction since %s)',"
							  "              $1::regclass, l.pid, coalesce(a.usename::text, '?'),"
							  "              coalesce(to_char(timezone('UTC', a.xact_start),"
							  "                               'YYYY-MM-DD HH24:MI:SS \"UTC\"'), '?'))"
							  "  FROM pg_locks l"
							  "  LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
							  " WHERE l.locktype = 'relation' AND l.relation = $1 AND l.granted"
							  "   AND l.pid <> pg_backend_pid()"
							  " ORDER BY a.xact_start NULLS LAST, l.pid LIMIT 1",
							  1, argtypes, args, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		strlcpy(buf, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
				len);
	else
		snprintf(buf, len, "relation %u is locked by another session", rel);
}

/*
 * Run the statements pgsentinel_archive_partitions_to_make() returns (args:
 * its arguments; schema: the name, not quoted).  A partition is made only if the
 * locks its ATTACH takes can be had at once: its parent's, and its
 * parent's DEFAULT partition's, which every reader of the parent holds.
 * Waiting there would stop the archive for as long as the longest report
 * runs (up to lock_timeout, then the whole pass fails); the partition is
 * left for a later pass instead (*busy counts those), the day ahead of its
 * need.  One whose range has begun is waited for: the step needs it.
 * *busy_rel is the first relation that could not be locked (unchanged if
 * none).  Returns the partitions made.
 */
static int
run_create_ddl(const char *schema, Datum *args, int *busy, Oid *busy_rel)
{
	Oid			argtypes[2] = {DATEOID, OIDOID};
	char	   *sql;
	char	  **ddl;
	char	  **name;
	Oid		   *parent;
	Oid		   *deflt;
	bool	   *needed;
	char	   *skipping = NULL;
	uint64		n;
	uint64		i;
	int			made = 0;

	sql = psprintf("SELECT * FROM %s.pgsentinel_archive_partitions_to_make($1, $2)",
				   quote_identifier(schema));
	if (SPI_execute_with_args(sql, 2, argtypes, args, NULL, true, 0) !=
		SPI_OK_SELECT)
		elog(ERROR, "pgsentinel archive partitions: could not list them");
	/* copied out: running a statement frees SPI_tuptable */
	n = SPI_processed;
	ddl = palloc0(sizeof(char *) * Max(n, 1));
	name = palloc0(sizeof(char *) * Max(n, 1));
	parent = palloc0(sizeof(Oid) * Max(n, 1));
	deflt = palloc0(sizeof(Oid) * Max(n, 1));
	needed = palloc0(sizeof(bool) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		ddl[i] = SPI_getvalue(tuple, desc, 1);
		name[i] = SPI_getvalue(tuple, desc, 2);
		parent[i] = DatumGetObjectId(SPI_getbinval(tuple, desc, 3, &isnull));
		if (isnull)
			parent[i] = InvalidOid;
		deflt[i] = DatumGetObjectId(SPI_getbinval(tuple, desc, 4, &isnull));
		if (isnull)
			deflt[i] = InvalidOid;
		needed[i] = DatumGetBool(SPI_getbinval(tuple, desc, 5, &isnull));
	}

	*busy = 0;
	for (i = 0; i < n; i++)
	{
		bool		first = (i == 0 || strcmp(name[i], name[i - 1]) != 0);

		if (!first && skipping != NULL)
			continue;
		skipping = NULL;
		if (first && OidIsValid(parent[i]))
		{
			Oid			failed = InvalidOid;

			if (!ConditionalLockRelationOid(parent[i], ShareUpdateExclusiveLock))
				failed = parent[i];
			else if (OidIsValid(deflt[i]) &&
					 !ConditionalLockRelationOid(deflt[i], AccessExclusiveLock))
				failed = deflt[i];
			/*
			 * A partition whose range has begun is needed by the next step:
			 * wait for it as for any lock (up to lock_timeout).  This is
			 * also the case of a CREATE EXTENSION that the archiver sees
			 * committed before its locks are released.
			 */
			if (OidIsValid(failed) && needed[i])
			{
				LockRelationOid(parent[i], ShareUpdateExclusiveLock);
				if (OidIsValid(deflt[i]))
					LockRelationOid(deflt[i], AccessExclusiveLock);
				failed = InvalidOid;
			}
			if (OidIsValid(failed))
			{
				skipping = name[i];
				(*busy)++;
				if (!OidIsValid(*busy_rel))
					*busy_rel = failed;
				continue;
			}
			made++;
		}
		if (SPI_execute(ddl[i], false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "pgsentinel archive partitions: unexpected result running \"%s\"",
				 ddl[i]);
	}
	return made;
}

/* Midnight UTC of the day of t, as a date. */
static Datum
utc_day(TimestampTz t)
{
	return DirectFunctionCall1(timestamp_date,
							   DirectFunctionCall2(timestamptz_zone,
												   CStringGetTextDatum("UTC"),
												   TimestampTzGetDatum(t)));
}

/*
 * Create the partitions from the day of "from" to tomorrow, and drop those
 * past their retention (settings in minutes, counted from now) that no
 * one else holds; *busy counts the drops and *create_busy the partitions
 * to make left to a later call, and waiting (PGS_MESSAGE_LEN) says who
 * holds what the latter wait for ("" if nothing waits).  Returns the
 * partitions created, and those dropped in *dropped.  Same caller rules
 * as pgs_archive_step(), but schema is the name, not quoted.
 */
int
pgs_archive_partitions(const char *schema, Oid nspid, TimestampTz from,
					   int *dropped, int *busy, int *create_busy,
					   char *waiting)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		create_args[2];
	Datum		drop_args[4];
	int			created;
	Oid			busy_rel = InvalidOid;

	create_args[0] = utc_day(from);
	create_args[1] = ObjectIdGetDatum(nspid);
	created = run_create_ddl(schema, create_args, create_busy, &busy_rel);

	drop_args[0] = utc_day(now - (int64) pgs_archive_retention_min * USECS_PER_MINUTE);
	drop_args[1] = utc_day(now - (int64) pgs_archive_minute_retention_min * USECS_PER_MINUTE);
	drop_args[2] = utc_day(now - (int64) pgs_archive_hour_retention_min * USECS_PER_MINUTE);
	drop_args[3] = ObjectIdGetDatum(nspid);
	*dropped = run_drop_ddl(schema, drop_args, busy, &busy_rel);

	waiting[0] = '\0';
	if (OidIsValid(busy_rel))
	{
		char		holder[PGS_MESSAGE_LEN];

		describe_holder(busy_rel, holder, sizeof(holder));
		snprintf(waiting, PGS_MESSAGE_LEN,
				 "partitions wait for a lock (%d to attach, %d expired to drop; tried every minute): %s",
				 *create_busy, *busy, holder);
	}
	return created;
}

/*
 * The oldest time the raw retention keeps: midnight UTC of the oldest day
 * not yet dropped.
 */
TimestampTz
pgs_archive_oldest_kept(void)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		day = utc_day(now - (int64) pgs_archive_retention_min * USECS_PER_MINUTE);

	return DatumGetTimestampTz(DirectFunctionCall2(timestamp_zone,
												   CStringGetTextDatum("UTC"),
												   DirectFunctionCall1(date_timestamp, day)));
}
