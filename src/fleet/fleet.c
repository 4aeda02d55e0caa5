/*-------------------------------------------------------------------------
 *
 * fleet.c
 *		The repository's periodic work for the fleet (docs/fleet.md), run
 *		by the archiver after each of its cycles: SQL function
 *		pgsentinel_fleet_node_keep() keeps the days of the servers placed
 *		on other repository nodes; pgsentinel_fleet_pull() pulls each server
 *		whose pull interval has passed; pgsentinel_fleet_expire_all() drops
 *		the fleet's partitions past their retention; then
 *		pgsentinel_fleet_roll() rolls the servers' rows up.
 *
 * Each call runs in its own transaction, on a primary only, under its own
 * deadline, and only when the extension's schema has the function: a
 * source that does not answer fails its own pull (its last_error, and
 * pgsentinel_status()) while the others are pulled all the same; a slow
 * roll never holds a pull's watermark locked; a slow node never holds the
 * pulls; and the drops on a node never wait for locks that this
 * transaction's own pulls took there through postgres_fdw.  Whatever
 * fails is logged, and its first failure of the tick is published for
 * pgsentinel_status(): the fleet never stops the archive.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "archive/archive.h"
#include "catalog/pg_type.h"
#include "db_worker.h"
#include "fleet/fleet.h"
#include "guc.h"
#include "pgsentinel.h"

/*
 * The extension's schema, when the extension there has the function named
 * %s (2.1.0 on); no row otherwise (a server that is no repository runs
 * this lookup and nothing else).  The function must be the extension's
 * own: in a schema others may create objects in, a function of that name
 * made by another role before the update would otherwise run with the
 * archiver's rights; and every argument is passed typed, so that an
 * overload planted later is never a better match.
 */
static const char *const find_sql =
"SELECT n.nspname"
"  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
" WHERE e.extname = 'pgsentinel'"
"   AND EXISTS (SELECT FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid"
"                WHERE d.classid = 'pg_proc'::regclass"
"                  AND d.refclassid = 'pg_extension'::regclass"
"                  AND d.refobjid = e.oid AND d.deptype = 'e'"
"                  AND p.proname = '%s'"
"                  AND p.pronamespace = n.oid)";

/*
 * The longest the periodic functions other than a pull may take: a node
 * that does not answer must not hold the archive up for long (the ring
 * would wrap), while a drop or a roll after an outage has minutes.  A
 * pull has pgsentinel_archive.fleet_pull_timeout, each server its own.
 */
#define FLEET_WORK_TIMEOUT_MS	(300 * 1000)

/*
 * The arguments of pgsentinel_fleet_node_keep(budget interval), exactly
 * typed: no node begun after two minutes, so that the nodes begun, each at
 * most its connect_timeout and a 60-s statement, end within the deadline
 * above.  (Passed, not left to the default: a call without arguments would
 * choose a function of no arguments that a role planted in our schema.)
 */
#define FLEET_NODE_KEEP_ARGS	"'2 minutes'::pg_catalog.interval"

/*
 * The fleet's failure that pgsentinel_status() shows (empty: none): what
 * failed ("the pull of fleet server \"x\"", a function) and when, and the
 * error's message.  It stays until the same work succeeds (a failed
 * server is not due again before its pull interval), the server is gone,
 * or another failure replaces it.
 */
static char failed_what[PGS_MESSAGE_LEN];
static char failed_when[MAXDATELEN + 1];
static char failed_message[PGS_MESSAGE_LEN];

/* Copy src into a buffer of PGS_MESSAGE_LEN, cut at a character's end. */
static void
copy_clipped(char *dst, const char *src)
{
	int			len = pg_mbcliplen(src, strlen(src), PGS_MESSAGE_LEN - 1);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

static void
note_failure(const char *what, const char *message)
{
	copy_clipped(failed_what, what);
	strlcpy(failed_when, timestamptz_to_str(GetCurrentTimestamp()),
			sizeof(failed_when));
	copy_clipped(failed_message, message);
}

static void
note_success(const char *what)
{
	if (strcmp(failed_what, what) == 0)
		failed_what[0] = '\0';
}

/*
 * From a PG_CATCH() of the work below: stop the deadline, roll the
 * transaction back and log the error as "what: message", unless SIGTERM
 * cancelled it (that is no failure: the worker exits).  Returns the
 * message, allocated in cxt, or NULL for a shutdown.
 */
static char *
abort_work(MemoryContext cxt, const char *what)
{
	ErrorData  *edata;
	char	   *message = NULL;

	disable_timeout(STATEMENT_TIMEOUT, false);
	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	pgs_db_work_abort();
	if (!ShutdownRequestPending)
	{
		ereport(LOG, (errmsg("%s: %s", what, edata->message)));
		message = MemoryContextStrdup(cxt, edata->message);
	}
	FreeErrorData(edata);
	return message;
}

/*
 * Begin a transaction of the tick, with pgsentinel locked in it
 * (pgs_db_work_begin()); returns its schema, InvalidOid if it is not
 * created.  schema, when not NULL, is where a statement made in an earlier
 * transaction names our objects: an error if pgsentinel is no longer
 * there.
 */
static Oid
fleet_work_begin(const char *schema)
{
	Oid			extoid;
	Oid			nspid = pgs_db_work_begin(PGS_NAME, &extoid);
	char	   *now_schema;

	if (schema != NULL &&
		((now_schema = get_namespace_name(nspid)) == NULL ||
		 strcmp(now_schema, schema) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pgsentinel was dropped, or its schema renamed, while the fleet's tick ran")));
	return nspid;
}

/*
 * Run "SELECT count(*) FROM schema.function(arguments)" once, in a
 * transaction of its own, with nargs parameters of type TEXT (the
 * arguments refer to them as $1, ...; each cast to its declared type),
 * under a deadline of timeout_ms: statement_timeout is not armed by SPI,
 * so the timer is set here, and its cancel ends a wait in postgres_fdw or
 * a lock like any other.  Returns NULL when it ran (or the extension here
 * has no such function), else the error's message, allocated in the
 * caller's memory context; errors are logged, never raised.
 */
static char *
run_periodic(const char *function, const char *arguments, int nargs,
			 const char *const *values, int timeout_ms)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	char	   *failed = NULL;

	PG_TRY();
	{
		char	   *call = NULL;
		Oid			nspid;
		Oid			argtypes[FUNC_MAX_ARGS];
		Datum		args[FUNC_MAX_ARGS];

		Assert(nargs <= FUNC_MAX_ARGS);
		nspid = fleet_work_begin(NULL);
		enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms);
		if (OidIsValid(nspid) &&
			SPI_execute(psprintf(find_sql, function), true, 1) == SPI_OK_SELECT &&
			SPI_processed == 1)
			call = psprintf("SELECT count(*) FROM %s.%s(%s)",
							quote_identifier(SPI_getvalue(SPI_tuptable->vals[0],
														  SPI_tuptable->tupdesc, 1)),
							function, arguments);
		if (call != NULL)
		{
			for (int i = 0; i < nargs; i++)
			{
				argtypes[i] = TEXTOID;
				args[i] = CStringGetTextDatum(values[i]);
			}
			pgstat_report_activity(STATE_RUNNING, call);
			if (SPI_execute_with_args(call, nargs, argtypes, args, NULL,
									  false, 0) != SPI_OK_SELECT)
				elog(ERROR, "%s: unexpected result", function);
		}
		disable_timeout(STATEMENT_TIMEOUT, false);
		pgs_db_work_commit();
	}
	PG_CATCH();
	{
		/* (the message's prefix must outlive the transaction) */
		MemoryContextSwitchTo(oldcxt);
		failed = abort_work(oldcxt, psprintf("%s failed", function));
	}
	PG_END_TRY();
	/* the transaction's end left TopMemoryContext current */
	MemoryContextSwitchTo(oldcxt);
	return failed;
}

/*
 * Run one SQL statement of ours, naming our objects in schema (not quoted;
 * NULL: it names none), in a transaction of its own; returns the first
 * column of each row, copied into the caller's memory context, or NIL when
 * it failed (logged).
 */
static List *
run_list(const char *sql, const char *schema)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	List	   *result = NIL;

	PG_TRY();
	{
		fleet_work_begin(schema);
		enable_timeout_after(STATEMENT_TIMEOUT, FLEET_WORK_TIMEOUT_MS);
		if (SPI_execute(sql, false, 0) < 0)
			elog(ERROR, "could not run: %s", sql);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			char	   *v = SPI_getvalue(SPI_tuptable->vals[i],
										 SPI_tuptable->tupdesc, 1);

			if (v != NULL)
			{
				/* the list too: SPI's context goes with the transaction */
				MemoryContext spicxt = MemoryContextSwitchTo(oldcxt);

				result = lappend(result, pstrdup(v));
				MemoryContextSwitchTo(spicxt);
			}
		}
		disable_timeout(STATEMENT_TIMEOUT, false);
		pgs_db_work_commit();
	}
	PG_CATCH();
	{
		(void) abort_work(oldcxt, "pgsentinel fleet");
		/* (what it had copied goes with the tick's context) */
		result = NIL;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	return result;
}

/*
 * The schema of the extension here, when it has a fleet (2.1.0 on): NULL
 * otherwise.
 */
static char *
fleet_schema(void)
{
	List	   *l = run_list(psprintf(find_sql, "pgsentinel_fleet_pull"), NULL);

	return l != NIL ? (char *) linitial(l) : NULL;
}

/*
 * Pull each pull server whose interval has passed, one at a time, each in
 * its own transaction under its own deadline: a source that does not
 * answer fails its own pull (recorded as its last_error, and named by
 * pgsentinel_status()), and the others are pulled all the same.
 */
static void
pull_due_servers(const char *schema)
{
	List	   *servers;
	ListCell   *lc;
	bool		failed_server_here = false;
	TimestampTz stop_at;

	/* every pull server, "1" before the name of each one that is due */
	servers = run_list(psprintf("SELECT CASE WHEN f.last_pull IS NULL"
								"   OR f.last_pull + f.pull_interval <= now()"
								"   THEN '1' ELSE '0' END || f.name"
								"  FROM %s.pgsentinel_fleet_server f"
								" WHERE f.method = 'pull' AND f.removed IS NULL"
								" ORDER BY f.server_id",
								quote_identifier(schema)), schema);
	/* a tick pulls for one timeout at most: the rest is due at the next */
	stop_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										  pgs_archive_fleet_pull_timeout_ms);
	foreach(lc, servers)
	{
		const char *name = (char *) lfirst(lc) + 1;
		char	   *what = psprintf("the pull of fleet server \"%s\"", name);
		char	   *failed;

		if (((char *) lfirst(lc))[0] == '1' && !ShutdownRequestPending &&
			GetCurrentTimestamp() < stop_at)
		{
			failed = run_periodic("pgsentinel_fleet_pull", "$1::pg_catalog.text",
								  1, &name, pgs_archive_fleet_pull_timeout_ms);
			if (failed == NULL)
				note_success(what);
			else if (!ShutdownRequestPending)
			{
				const char *values[2] = {name, failed};

				note_failure(what, failed);
				/* the pull's own error is rolled back with it: keep it here */
				(void) run_periodic("pgsentinel_fleet_pull_failed",
									"$1::pg_catalog.text, $2::pg_catalog.text",
									2, values, FLEET_WORK_TIMEOUT_MS);
			}
		}
		/* (after the pull: it may have just failed) */
		if (strcmp(what, failed_what) == 0)
			failed_server_here = true;
	}
	/* a server removed since it failed */
	if (!failed_server_here && strncmp(failed_what, "the pull of", 11) == 0)
		failed_what[0] = '\0';
}

/* Publish the failure to show, or that there is none. */
static void
publish_fleet_error(void)
{
	char		failed[PGS_MESSAGE_LEN] = "";

	/* formatted before the lock, which is held only to copy (shmem.c) */
	if (failed_what[0] != '\0')
		snprintf(failed, sizeof(failed), "%s failed at %s", failed_what,
				 failed_when);
	(void) pgs_lock_exclusive();
	memcpy(pgs_state->archiver.fleet_failed, failed, PGS_MESSAGE_LEN);
	memcpy(pgs_state->archiver.fleet_error, failed_message, PGS_MESSAGE_LEN);
	pgs_unlock_exclusive();
}

/* Run one of the tick's steps other than the pulls, and note how it went. */
static void
run_step(const char *function, const char *arguments)
{
	char	   *what = psprintf("%s()", function);
	char	   *failed = run_periodic(function, arguments, 0, NULL,
									  FLEET_WORK_TIMEOUT_MS);

	if (failed != NULL)
		note_failure(what, failed);
	else if (!ShutdownRequestPending)
		note_success(what);
}

/* Keep the nodes, pull, drop past retention, then roll up, once. */
void
pgs_fleet_tick(void)
{
	static MemoryContext tick_cxt = NULL;
	MemoryContext oldcxt;
	char	   *schema;

	if (RecoveryInProgress())
		return;
	/* what a tick allocates (names, messages) goes with it */
	if (tick_cxt == NULL)
		tick_cxt = AllocSetContextCreate(TopMemoryContext,
										 "pgsentinel fleet tick",
										 ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(tick_cxt);
	schema = fleet_schema();
	if (schema == NULL)
		failed_what[0] = '\0';
	else
	{
		run_step("pgsentinel_fleet_node_keep", FLEET_NODE_KEEP_ARGS);
		if (!ShutdownRequestPending)
			pull_due_servers(schema);
		if (!ShutdownRequestPending)
			run_step("pgsentinel_fleet_expire_all", "");
		/* every server */
		if (!ShutdownRequestPending)
			run_step("pgsentinel_fleet_roll", "NULL::pg_catalog.text");
	}
	publish_fleet_error();
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(tick_cxt);
}
