/*-------------------------------------------------------------------------
 *
 * status.c
 *		pgsentinel_status(): one row that tells a DBA whether sampling works
 *		and, when the history is empty or short, why.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "storage/lmgr.h"
#include "utils/catcache.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "archive/archive.h"
#include "compat.h"
#include "db_worker.h"
#include "guc.h"
#include "pgsentinel.h"
#include "statements/pgssh.h"
#include "store/ash_rows.h"
#include "store/ring.h"
#include "store/text_area.h"

PG_FUNCTION_INFO_V1(pgsentinel_status_2_0);

/* 2.0 declared the first 33 columns; 2.1 adds the archiver's */
#define STATUS_COLS_2_0 33
#define STATUS_COLS 45

/* What the status function copies out under the lock. */
typedef struct StatusCopy
{
	int32		worker_pid;
	TimestampTz worker_started;
	uint64		samples_taken;
	TimestampTz last_sample_time;
	int64		last_sample_us;
	int64		max_sample_us;
	int64		max_lock_wait_us;
	uint64		ash_written;
	uint64		ash_rows;		/* visible */
	bool		ash_wrapped;	/* rows written since a reset overwritten */
	TimestampTz reset_time;
	TimestampTz oldest_time;
	uint64		text_used;
	uint64		texts_stored;
	uint64		texts_dropped;
	uint64		rows_backfilled;
	uint64		sample_overruns;
	double		period;
	bool		track_idle_trans;
	int			pgssh_state;
	char		pgssh_message[PGS_MESSAGE_LEN];
	int32		pgssh_pid;
	uint64		pgssh_written;
	uint64		pgssh_rows;		/* visible */
	uint64		pgssh_samples;
	int64		pgssh_last_us;
	int64		pgssh_max_us;
	uint64		requests_skipped;
	uint64		keys_dropped;
	uint64		blockers_via_core;
	int			archive_state;
	char		archive_message[PGS_MESSAGE_LEN];
	char		fleet_failed[PGS_MESSAGE_LEN];
	char		fleet_error[PGS_MESSAGE_LEN];
	char		archive_waiting[PGS_MESSAGE_LEN];
	int32		archive_pid;
	TimestampTz archive_last_time;
	TimestampTz archive_last_sample_time;
	int64		archive_last_us;
	uint64		archive_samples;
	uint64		archive_samples_skipped;
	uint64		archive_rows;
	uint64		archive_samples_lost;
	uint64		archive_rows_lost;
	int64		archive_bytes;
} StatusCopy;

/* Copy the status fields under the shared lock. */
static void
status_copy_out(StatusCopy *c)
{
	uint64		capacity = pgs_state->sampler.ash.capacity;
	uint64		ash_from;
	uint64		text_head;

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	c->worker_pid = pgs_state->sampler.pid;
	c->worker_started = pgs_state->sampler.started;
	c->samples_taken = pgs_state->sampler.samples_taken;
	c->last_sample_time = pgs_state->sampler.last_sample_time;
	c->last_sample_us = pgs_state->sampler.last_sample_us;
	c->max_sample_us = pgs_state->sampler.max_sample_us;
	c->max_lock_wait_us = pgs_state->sampler.max_lock_wait_us;
	c->ash_written = pgs_ring_written(&pgs_state->sampler.ash);
	c->ash_rows = pgs_ring_visible_rows(&pgs_state->sampler.ash);
	ash_from = pg_atomic_read_u64(&pgs_state->sampler.ash.visible_from);
	c->ash_wrapped = c->ash_written > capacity &&
		c->ash_written - capacity > ash_from;
	c->reset_time = pgs_state->reset.time;
	c->oldest_time = 0;
	if (c->ash_rows > 0)
	{
		uint64		oldest = c->ash_written - c->ash_rows;

		c->oldest_time = pgs_ash_rows()[oldest % capacity].ash_time;
	}
	text_head = pg_atomic_read_u64(&pgs_state->text.head);
	c->text_used = text_head - Min(text_head, pgs_text_visible_tail());
	c->texts_stored = pgs_state->text.stored;
	c->texts_dropped = pgs_state->text.dropped;
	c->rows_backfilled = pgs_state->sampler.rows_backfilled;
	c->blockers_via_core = pgs_state->sampler.blockers_via_core;
	c->sample_overruns = pgs_state->sampler.sample_overruns;
	c->period = pgs_state->sampler.period;
	c->track_idle_trans = pgs_state->sampler.track_idle_trans;
	c->pgssh_state = pgs_state->statements.state;
	memcpy(c->pgssh_message, pgs_state->statements.message, PGS_MESSAGE_LEN);
	c->pgssh_pid = pgs_state->statements.pid;
	c->pgssh_written = pgs_ring_written(&pgs_state->statements.ring);
	c->pgssh_rows = pgs_ring_visible_rows(&pgs_state->statements.ring);
	c->pgssh_samples = pgs_state->statements.samples;
	c->pgssh_last_us = pgs_state->statements.last_us;
	c->pgssh_max_us = pgs_state->statements.max_us;
	c->requests_skipped = pgs_state->statements.requests_skipped;
	c->keys_dropped = pgs_state->statements.keys_dropped;
	c->archive_state = pgs_state->archiver.state;
	memcpy(c->archive_message, pgs_state->archiver.message, PGS_MESSAGE_LEN);
	memcpy(c->fleet_failed, pgs_state->archiver.fleet_failed, PGS_MESSAGE_LEN);
	memcpy(c->fleet_error, pgs_state->archiver.fleet_error, PGS_MESSAGE_LEN);
	memcpy(c->archive_waiting, pgs_state->archiver.waiting, PGS_MESSAGE_LEN);
	c->archive_pid = pgs_state->archiver.pid;
	c->archive_last_time = pgs_state->archiver.last_time;
	c->archive_last_sample_time = pgs_state->archiver.last_sample_time;
	c->archive_last_us = pgs_state->archiver.last_us;
	c->archive_samples = pgs_state->archiver.samples;
	c->archive_samples_skipped = pgs_state->archiver.samples_skipped;
	c->archive_rows = pgs_state->archiver.rows;
	c->archive_samples_lost = pgs_state->archiver.samples_lost;
	c->archive_rows_lost = pgs_state->archiver.rows_lost;
	c->archive_bytes = pgs_state->archiver.bytes;
	LWLockRelease(pgs_state->lock);
}

/*
 * Functions in the extension's schema that are named like one of its own
 * and are not members of it: another role created them there, and a call
 * of ours may become ambiguous (an overload with defaults) and fail.  Name
 * resolution cannot rule that out; the extension belongs in a schema only
 * trusted roles may create in (docs/security.md).  Appends "; ..." naming
 * the first of them and how many there are, if any.
 */
static void
append_foreign_overloads_locked(StringInfo buf)
{
	Oid			extoid;
	Oid			nspid = InvalidOid;
	Relation	rel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *names = NIL;
	ListCell   *lc;
	int			found = 0;
	Oid			first = InvalidOid;

	extoid = get_extension_oid("pgsentinel", true);
	if (!OidIsValid(extoid))
		return;
	nspid = pgs_extension_schema(extoid);

	/* the names of our functions */
	rel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, DependReferenceIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);
		char	   *name;

		if (d->classid != ProcedureRelationId || d->deptype != DEPENDENCY_EXTENSION)
			continue;
		name = get_func_name(d->objid);
		if (name != NULL && !list_member(names, makeString(name)))
			names = lappend(names, makeString(name));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	/* the functions of those names in our schema that are not ours */
	foreach(lc, names)
	{
		CatCList   *list = SearchSysCacheList1(PROCNAMEARGSNSP,
											   CStringGetDatum(strVal(lfirst(lc))));
		int			i;

		for (i = 0; i < list->n_members; i++)
		{
			Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(&list->members[i]->tuple);

			if (proc->pronamespace == nspid &&
				getExtensionOfObject(ProcedureRelationId, proc->oid) != extoid)
			{
				if (found++ == 0)
					first = proc->oid;
			}
		}
		ReleaseSysCacheList(list);
	}
	if (found > 0)
		appendStringInfo(buf,
						 "; %d function(s) in the extension's schema are named like pgsentinel's but are not part of it, such as %s: another role created them, and they can make pgsentinel's calls fail; drop them and let only trusted roles create in that schema",
						 found, format_procedure_qualified(first));
}

/*
 * The roles, superusers aside, that may create objects in the extension's
 * schema nspid: any of them can plant an object under a name pgsentinel
 * looks up when it runs (docs/security.md).  Appends "; ..." naming the
 * first of them and how many there are, if any.  The database's owner
 * stands for pg_database_owner, under its own name.
 */
static void
append_schema_creators_locked(StringInfo buf, Oid nspid)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	int			found = 0;
	char	   *first = NULL;
	char	   *nspname;

	rel = table_open(AuthIdRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_authid role = (Form_pg_authid) GETSTRUCT(tup);

		if (role->rolsuper || role->oid == ROLE_PG_DATABASE_OWNER ||
			!pgs_schema_create_allowed(nspid, role->oid))
			continue;
		if (found++ == 0 ||
			strcmp(NameStr(role->rolname), first) < 0)
			first = pstrdup(NameStr(role->rolname));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	nspname = get_namespace_name(nspid);
	/* (a schema dropped meanwhile has nothing to say) */
	if (found > 0 && nspname != NULL)
		appendStringInfo(buf,
						 "; %d role(s) that are not superusers may create objects in the extension's schema %s, such as %s: they can make pgsentinel's calls fail and its fleet refuses to work there; REVOKE CREATE ON SCHEMA %s FROM them, or install pgsentinel in a schema of its own",
						 found, quote_identifier(nspname),
						 quote_identifier(first), quote_identifier(nspname));
}

/*
 * The check above, taken only when it waits for no lock on the catalogs it
 * reads: a monitoring call never waits for a DBA's LOCK TABLE pg_extension
 * or a VACUUM FULL; the check is left out then.
 */
static void
append_foreign_overloads(StringInfo buf)
{
	if (!ConditionalLockRelationOid(ExtensionRelationId, AccessShareLock))
		return;
	if (ConditionalLockRelationOid(DependRelationId, AccessShareLock))
	{
		if (ConditionalLockRelationOid(ProcedureRelationId, AccessShareLock))
		{
			append_foreign_overloads_locked(buf);
			if (ConditionalLockRelationOid(AuthIdRelationId, AccessShareLock))
			{
				Oid			extoid = get_extension_oid("pgsentinel", true);
				Oid			nspid = OidIsValid(extoid) ? pgs_extension_schema(extoid) : InvalidOid;

				if (OidIsValid(nspid))
					append_schema_creators_locked(buf, nspid);
				UnlockRelationOid(AuthIdRelationId, AccessShareLock);
			}
			UnlockRelationOid(ProcedureRelationId, AccessShareLock);
		}
		UnlockRelationOid(DependRelationId, AccessShareLock);
	}
	UnlockRelationOid(ExtensionRelationId, AccessShareLock);
}

/*
 * A sentence for the DBA: what is wrong, or why the history holds what it
 * holds, and what to do about it.
 */
static char *
diagnosis(const StatusCopy *c, TimestampTz now)
{
	StringInfoData buf;
	int64		period_us = (int64) (c->period * 1000000.0);

	initStringInfo(&buf);
	if (c->worker_pid == 0)
		appendStringInfoString(&buf,
							   "the sampler worker is not running: look for \"pgsentinel\" in the server log; it is restarted within 10 seconds after a failure");
	else if (c->samples_taken == 0)
		appendStringInfoString(&buf, "the sampler has started but taken no sample yet");
	else if (now - c->last_sample_time > 3 * period_us + 1000000)
		appendStringInfo(&buf, "no sample for %.1f s although the period is %g s: the sampler is stalled",
						 (double) (now - c->last_sample_time) / 1000000.0,
						 c->period);
	else if (c->ash_written == 0)
		appendStringInfoString(&buf,
							   "sampling works, but no session was active at any sample yet (idle sessions are not recorded unless pgsentinel_ash.track_idle_trans is on for idle-in-transaction ones)");
	else if (c->ash_rows == 0)
		appendStringInfo(&buf,
						 "sampling works, but no session was active at any sample since pgsentinel_reset() emptied the history at %s",
						 timestamptz_to_str(c->reset_time));
	else
	{
		appendStringInfoString(&buf, "ok");
		if (c->ash_wrapped)
			appendStringInfoString(&buf,
								   "; the ring has wrapped: older rows were overwritten, raise pgsentinel_ash.max_entries to keep more");
		if (c->texts_dropped > 0)
			appendStringInfo(&buf,
							 "; " UINT64_FORMAT " texts were dropped while rows still used them (those rows show NULL texts): raise pgsentinel_ash.text_area_size",
							 c->texts_dropped);
	}
	if (c->worker_pid != 0 && c->pgssh_state != PGSSH_OK &&
		c->pgssh_state != PGSSH_DISABLED && c->pgssh_message[0] != '\0')
		appendStringInfo(&buf, "; statements history: %s", c->pgssh_message);
	if (c->worker_pid != 0 && c->archive_message[0] != '\0' &&
		(c->archive_state == PGS_ARCHIVE_NOT_CONNECTED ||
		 c->archive_state == PGS_ARCHIVE_NOT_CREATED ||
		 c->archive_state == PGS_ARCHIVE_FAILING))
		appendStringInfo(&buf, "; archive: %s", c->archive_message);
	else if (c->worker_pid != 0 && c->archive_pid != 0 &&
			 c->archive_waiting[0] != '\0')
		appendStringInfo(&buf, "; archive: %s", c->archive_waiting);
	if (c->archive_rows_lost > 0 || c->archive_samples_lost > 0)
		appendStringInfo(&buf,
						 "; the ring overwrote " UINT64_FORMAT " samples and " UINT64_FORMAT " rows before they were archived: shorten pgsentinel_archive.interval or raise pgsentinel_ash.max_entries",
						 c->archive_samples_lost, c->archive_rows_lost);
	/* the error may name hosts and users: only for who may read last_error */
	if (c->archive_pid != 0 && c->fleet_failed[0] != '\0')
	{
		if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
			appendStringInfo(&buf, "; fleet: %s: %s", c->fleet_failed,
							 c->fleet_error);
		else
			appendStringInfo(&buf, "; fleet: %s (pgsentinel_fleet_status.last_error says why)",
							 c->fleet_failed);
	}
	append_foreign_overloads(&buf);
	return buf.data;
}

/*
 * The archiver learns that the extension was created in its database at
 * its next try (at most pgsentinel_archive.interval later): called in that
 * database where the extension now has its archive, its "not created" is
 * stale.  Say "starting" instead.
 */
static void
correct_stale_not_created(StatusCopy *c)
{
	Oid			extoid;
	Oid			nspid;
	char	   *dbname;

	if (c->archive_state != PGS_ARCHIVE_NOT_CREATED || c->archive_pid == 0)
		return;
	dbname = get_database_name(MyDatabaseId);
	if (dbname == NULL || strcmp(dbname, pgs_db_name) != 0)
		return;
	/* a monitoring call waits for no lock (see below) */
	if (!ConditionalLockRelationOid(ExtensionRelationId, AccessShareLock))
		return;
	extoid = get_extension_oid(PGS_NAME, true);
	nspid = OidIsValid(extoid) ? pgs_extension_schema(extoid) : InvalidOid;
	UnlockRelationOid(ExtensionRelationId, AccessShareLock);
	if (!OidIsValid(nspid) ||
		!OidIsValid(get_relname_relid("pgsentinel_archive_state", nspid)))
		return;
	c->archive_state = PGS_ARCHIVE_STARTING;
	c->archive_message[0] = '\0';
}

/* SQL function pgsentinel_status(). */
Datum
pgsentinel_status_2_0(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[STATUS_COLS];
	bool		nulls[STATUS_COLS];
	StatusCopy	c;
	TimestampTz now = GetCurrentTimestamp();
	int			i = 0;

	pgs_check_loaded();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	status_copy_out(&c);
	correct_stale_not_created(&c);
	memset(nulls, 0, sizeof(nulls));

	values[i] = Int32GetDatum(c.worker_pid);
	nulls[i++] = (c.worker_pid == 0);
	values[i] = TimestampTzGetDatum(c.worker_started);
	nulls[i++] = (c.worker_started == 0);
	values[i++] = Int64GetDatum((int64) c.samples_taken);
	values[i] = TimestampTzGetDatum(c.last_sample_time);
	nulls[i++] = (c.last_sample_time == 0);
	values[i] = Int64GetDatum(c.last_sample_us);
	nulls[i++] = (c.samples_taken == 0);
	values[i] = Int64GetDatum(c.max_sample_us);
	nulls[i++] = (c.samples_taken == 0);
	values[i++] = Int64GetDatum(c.max_lock_wait_us);
	values[i++] = Int64GetDatum((int64) c.ash_rows);
	values[i++] = Int32GetDatum((int32) pgs_state->sampler.ash.capacity);
	values[i++] = Int64GetDatum((int64) c.ash_written);
	values[i] = TimestampTzGetDatum(c.oldest_time);
	nulls[i++] = (c.oldest_time == 0);
	values[i++] = Int64GetDatum((int64) c.text_used);
	values[i++] = Int64GetDatum((int64) pgs_state->text.size);
	values[i++] = Int64GetDatum((int64) c.texts_stored);
	values[i++] = Int64GetDatum((int64) c.texts_dropped);
	values[i++] = Int64GetDatum((int64) c.rows_backfilled);
	values[i++] = Int64GetDatum((int64) c.sample_overruns);
	values[i++] = Int64GetDatum((int64) c.blockers_via_core);
	values[i] = Float8GetDatum(c.period);
	nulls[i++] = (c.worker_pid == 0);
	values[i] = BoolGetDatum(c.track_idle_trans);
	nulls[i++] = (c.worker_pid == 0);
	values[i++] = Int32GetDatum((int32) sizeof(AshRow));
	values[i++] = Int64GetDatum((int64) pgs_shmem_size());
	values[i++] = CStringGetTextDatum(pgssh_state_name(c.pgssh_state));
	values[i] = CStringGetTextDatum(c.pgssh_message);
	nulls[i++] = (c.pgssh_message[0] == '\0');
	values[i] = Int32GetDatum(c.pgssh_pid);
	nulls[i++] = (c.pgssh_pid == 0);
	values[i++] = Int64GetDatum((int64) c.pgssh_rows);
	values[i++] = Int32GetDatum((int32) pgs_state->statements.ring.capacity);
	values[i++] = Int64GetDatum((int64) c.pgssh_samples);
	values[i] = Int64GetDatum(c.pgssh_last_us);
	nulls[i++] = (c.pgssh_samples == 0);
	values[i] = Int64GetDatum(c.pgssh_max_us);
	nulls[i++] = (c.pgssh_samples == 0);
	values[i++] = Int64GetDatum((int64) c.requests_skipped);
	values[i++] = Int64GetDatum((int64) c.keys_dropped);
	values[i++] = CStringGetTextDatum(diagnosis(&c, now));
	Assert(i == STATUS_COLS_2_0);

	values[i++] = CStringGetTextDatum(pgs_archive_state_name(c.archive_state));
	values[i] = CStringGetTextDatum(c.archive_message);
	nulls[i++] = (c.archive_message[0] == '\0');
	values[i] = Int32GetDatum(c.archive_pid);
	nulls[i++] = (c.archive_pid == 0);
	values[i] = TimestampTzGetDatum(c.archive_last_time);
	nulls[i++] = (c.archive_last_time == 0);
	/* how far the archive is behind the newest sample */
	values[i] = Float8GetDatum(c.archive_last_sample_time == 0 ? 0.0 :
							   Max(0.0, (double) (c.last_sample_time -
												  c.archive_last_sample_time) / 1000000.0));
	nulls[i++] = (c.archive_last_sample_time == 0);
	values[i] = Int64GetDatum(c.archive_last_us);
	nulls[i++] = (c.archive_last_time == 0);
	values[i++] = Int64GetDatum((int64) c.archive_samples);
	values[i++] = Int64GetDatum((int64) c.archive_samples_skipped);
	values[i++] = Int64GetDatum((int64) c.archive_rows);
	values[i++] = Int64GetDatum((int64) c.archive_samples_lost);
	values[i++] = Int64GetDatum((int64) c.archive_rows_lost);
	values[i] = Int64GetDatum(c.archive_bytes);
	nulls[i++] = (c.archive_bytes == 0);
	Assert(i == STATUS_COLS);

	/* a 2.0 declaration (before ALTER EXTENSION UPDATE) has fewer columns */
	if (tupdesc->natts != STATUS_COLS && tupdesc->natts != STATUS_COLS_2_0)
		elog(ERROR, "pgsentinel_status() is declared with %d columns, expected %d",
			 tupdesc->natts, STATUS_COLS);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
