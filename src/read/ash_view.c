/*-------------------------------------------------------------------------
 *
 * ash_view.c
 *		pg_active_session_history(): the rows of the ASH ring, read a chunk
 *		at a time (without a lock, within bounds fixed once per query:
 *		ring.c) and turned into tuples.
 *		Names are resolved from OIDs, wait events decoded, texts looked up
 *		one at a time in the text area, and what pg_stat_activity hides from
 *		a reader hidden from it too.  A reader's memory is bounded: one
 *		chunk of rows, the largest text it read, and the datums it reuses
 *		(reset beyond CACHE_MEMORY_LIMIT).
 *
 * Visibility follows pg_stat_get_activity(), column by column.  A reader
 * may see a session when it has the privileges of pg_read_all_stats or of
 * the session's role (superusers have both); core's test, done once per
 * role here (may_see).  Of a session it may not see, a reader gets:
 *	- as core: ash_time and sample_id (the sample's own), datid, datname,
 *	  pid, usesysid, usename, application_name, backend_xid, backend_xmin;
 *	- "<insufficient privilege>" in top_level_query and query, as core in
 *	  query;
 *	- NULL, as core, in leader_pid, client_addr, client_hostname,
 *	  client_port, backend_start, xact_start, query_start, state_change,
 *	  wait_event_type, wait_event (never 'CPU'), state, queryid,
 *	  nested_queryid and backend_type; NULL in cmdtype, which tells what
 *	  the query text would;
 *	- blockers, blockerpid and blocking_pids: the pids blocking the
 *	  session, which core's pg_blocking_pids() and pg_locks show to every
 *	  role.
 * blocker_state is the state of another session, the blocker: it is shown
 * when the reader may see the blocker's role (blocker_usesysid), whoever
 * the waiter is.  Rows exist for hidden sessions: that a session was busy
 * at a sample is what a history is, and what its count of rows tells.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pgsentinel.h"
#include "read/views.h"
#include "store/ash_rows.h"
#include "store/ring.h"
#include "store/text_area.h"

PG_FUNCTION_INFO_V1(pg_active_session_history_2_0);
PG_FUNCTION_INFO_V1(pg_active_session_history);

/* Every column this file can produce (src/columns.txt's [ash]). */
const char *const pgs_ash_columns[PGS_ASH_COLS] = {PGS_ASH_COLUMN_NAMES};
const Oid	pgs_ash_column_types[PGS_ASH_COLS] = {PGS_ASH_COLUMN_TYPES};

#define ASH_COLS			PGS_ASH_COLS
#define TEXT_CACHE_SIZE		4096
/* the reused datums are dropped and rebuilt past this much memory */
#define CACHE_MEMORY_LIMIT	(1024 * 1024)
#define INSUFFICIENT_PRIVILEGE "<insufficient privilege>"

/* Text datums already built during this read, by reference. */
typedef struct TextCacheEntry
{
	PgsTextRef	ref;
	Datum		datum;
	bool		isnull;
} TextCacheEntry;

/* Decoded wait events, by (wait_event_info, state). */
#define WAIT_CACHE_SIZE		64
typedef struct WaitCacheEntry
{
	uint32		wait_event_info;
	uint8		state;
	bool		isnull;
	Datum		type;			/* 0: entry unused */
	Datum		name;
} WaitCacheEntry;

/* The name of the last OID looked up (database or role), as a text datum. */
typedef struct NameCache
{
	Oid			oid;
	Datum		name;			/* 0: nothing cached */
	bool		isnull;
} NameCache;

/* The answer of may_see() for the last role asked about. */
typedef struct RoleCheck
{
	Oid			role;
	bool		allowed;
} RoleCheck;

/* State of a reader (pgs_ash_reader_begin). */
struct AshReader
{
	MemoryContext reader_cxt;	/* the reader and its fixed datums */
	MemoryContext cache_cxt;	/* datums reused across rows, bounded */
	PgsRingCursor rows;
	PgsTextReader text;
	Datum		state_names[PGS_STATE_OTHER + 1];
	Datum		cmdtype_names[PGS_CMD_NOTHING + 1];
	Datum		empty_array;	/* '{}'::int[] */
	Datum		insufficient_privilege;
	uint8		last_backend_type;
	Datum		last_backend_type_name;
	TextCacheEntry *cache;
	NameCache	dbname;			/* of the last row's database */
	NameCache	username;		/* of the last row's role */
	bool		read_all;		/* pg_read_all_stats or superuser */
	RoleCheck	session_role;	/* of the last row's session */
	RoleCheck	blocker_role;	/* of the last row's blocker */
	WaitCacheEntry wait_cache[WAIT_CACHE_SIZE];
	int64		min_sample_id;	/* rows outside these are passed over */
	int64		max_sample_id;
};

/* pg_stat_activity's word for a state. */
const char *
pgs_state_name(uint8 state)
{
	switch (state)
	{
		case PGS_STATE_ACTIVE:
			return "active";
		case PGS_STATE_FASTPATH:
			return "fastpath function call";
		case PGS_STATE_IDLE_IN_XACT:
			return "idle in transaction";
		case PGS_STATE_IDLE_IN_XACT_ABORTED:
			return "idle in transaction (aborted)";
		case PGS_STATE_IDLE:
			return "idle";
		default:
			return NULL;
	}
}

/* pgsentinel 1.4's word for a command type. */
const char *
pgs_cmdtype_name(uint8 cmdtype)
{
	switch (cmdtype)
	{
		case PGS_CMD_SELECT:
			return "SELECT";
		case PGS_CMD_UPDATE:
			return "UPDATE";
		case PGS_CMD_INSERT:
			return "INSERT";
		case PGS_CMD_DELETE:
			return "DELETE";
		case PGS_CMD_MERGE:
			return "MERGE";
		case PGS_CMD_UTILITY:
			return "UTILITY";
		case PGS_CMD_NOTHING:
			return "NOTHING";
		default:
			return "UNKNOWN";
	}
}

/*
 * The text datum of a reference (NULL when absent or overwritten), clipped
 * at a character boundary when core truncated it to
 * track_activity_query_size.  Built once per reference and read.
 */
static Datum
text_datum(AshReader *rd, PgsTextRef ref, bool *isnull)
{
	/* references are entry positions + 1, and entries are 8-byte aligned */
	TextCacheEntry *ce = &rd->cache[((ref - 1) >> 3) % TEXT_CACHE_SIZE];
	const char *data;
	uint32		len;

	if (ref == PGS_TEXT_NONE)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (ce->ref == ref)
	{
		*isnull = ce->isnull;
		return ce->datum;
	}
	ce->ref = ref;
	ce->isnull = !pgs_text_lookup(&rd->text, ref, &data, &len);
	ce->datum = (Datum) 0;
	if (!ce->isnull)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(rd->cache_cxt);

		if (len >= (uint32) pgstat_track_activity_query_size - 1)
			len = pg_mbcliplen(data, len, len);
		ce->datum = PointerGetDatum(cstring_to_text_with_len(data, len));
		MemoryContextSwitchTo(oldcxt);
	}
	*isnull = ce->isnull;
	return ce->datum;
}

/* The blocking_pids array of a row ('{}' when there are none). */
static Datum
blocking_pids_datum(AshReader *rd, const AshRow *row, bool *isnull)
{
	const char *data;
	uint32		len;
	int			n;
	Datum	   *elems;
	int			i;

	*isnull = false;
	if (row->blocking_pids == PGS_TEXT_NONE)
		return rd->empty_array;
	if (!pgs_text_lookup(&rd->text, row->blocking_pids, &data, &len))
	{
		*isnull = true;
		return (Datum) 0;
	}
	/* waiters of one lock may share a list: the row shows its prefix */
	n = Min(len / sizeof(int32), (uint32) Max(row->blockers, 0));
	elems = palloc(sizeof(Datum) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		int32		pid;

		memcpy(&pid, data + i * sizeof(int32), sizeof(int32));
		elems[i] = Int32GetDatum(pid);
	}
	return PointerGetDatum(construct_array(elems, n, INT4OID, sizeof(int32),
										   true, TYPALIGN_INT));
}

/* client_addr as text(inet) shows it: "10.0.3.15/32". */
static Datum
client_addr_datum(const AshRow *row, bool *isnull)
{
	char		buf[INET6_ADDRSTRLEN + 8];

	*isnull = true;
	if (row->client_family != AF_INET && row->client_family != AF_INET6)
		return (Datum) 0;
	if (inet_ntop(row->client_family == AF_INET ? AF_INET : AF_INET6,
				  row->client_addr, buf, INET6_ADDRSTRLEN) == NULL)
		return (Datum) 0;
	strcat(buf, row->client_family == AF_INET ? "/32" : "/128");
	*isnull = false;
	return CStringGetTextDatum(buf);
}

/*
 * May the current user see the sessions of this role?  pg_stat_activity's
 * rule (see the file banner); the last answer is kept in *check, since rows
 * of one role usually follow one another.
 */
static bool
may_see(AshReader *rd, RoleCheck *check, Oid role)
{
	if (rd->read_all)
		return true;
	if (role != check->role)
	{
		check->role = role;
		check->allowed = OidIsValid(role) &&
			has_privs_of_role(GetUserId(), role);
	}
	return check->allowed;
}

/* Wait event type and name, 'CPU' for an active session not waiting. */
static void
wait_event_datums(AshReader *rd, const AshRow *row, Datum *type, Datum *name,
				  bool *isnull)
{
	uint32		h = (row->wait_event_info * 2654435761U) ^ row->state;
	WaitCacheEntry *we = &rd->wait_cache[(h >> 8) % WAIT_CACHE_SIZE];

	if (we->type == (Datum) 0 || we->wait_event_info != row->wait_event_info ||
		we->state != row->state)
	{
		const char *t = NULL;
		const char *n = NULL;
		MemoryContext oldcxt = MemoryContextSwitchTo(rd->cache_cxt);

		if (row->wait_event_info == 0)
		{
			if (row->state == PGS_STATE_ACTIVE || row->state == PGS_STATE_FASTPATH)
				t = n = "CPU";
		}
		else
		{
			t = pgstat_get_wait_event_type(row->wait_event_info);
			n = pgstat_get_wait_event(row->wait_event_info);
		}
		we->wait_event_info = row->wait_event_info;
		we->state = row->state;
		we->isnull = (t == NULL);
		we->type = CStringGetTextDatum(t ? t : "");
		we->name = CStringGetTextDatum(n ? n : "");
		MemoryContextSwitchTo(oldcxt);
	}
	*type = we->type;
	*name = we->name;
	*isnull = we->isnull;
}

/* Names of a database and of a role, NULL if there is none (any more). */
static char *
database_name(Oid oid)
{
	return OidIsValid(oid) ? get_database_name(oid) : NULL;
}

static char *
role_name(Oid oid)
{
	return OidIsValid(oid) ? GetUserNameFromId(oid, true) : NULL;
}

/*
 * The name of oid as a text datum: rows of the same database or role
 * follow one another, so the last one looked up is kept (in the reader's
 * cache memory).
 */
static Datum
cached_name(AshReader *rd, NameCache *c, Oid oid, char *(*lookup) (Oid),
			bool *isnull)
{
	if (oid != c->oid || c->name == (Datum) 0)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(rd->cache_cxt);
		char	   *name = lookup(oid);

		c->oid = oid;
		c->isnull = (name == NULL);
		c->name = CStringGetTextDatum(name ? name : "");
		MemoryContextSwitchTo(oldcxt);
	}
	*isnull = c->isnull;
	return c->name;
}

/* A text datum of a string, or NULL. */
static inline Datum
text_or_null(const char *s, bool *isnull)
{
	*isnull = (s == NULL);
	return s == NULL ? (Datum) 0 : CStringGetTextDatum(s);
}

/*
 * Fill a row's values in 2.0's column order.  The columns that take more
 * than a load (names, texts, addresses, arrays) are computed only when
 * want[column] is set (want NULL: all), and are NULL otherwise.  Columns
 * the reader may not see are NULL (see the file banner).
 */
#define WANT(c)	(want == NULL || want[PGS_ASH_##c])
/* a column, by its name in src/columns.txt */
#define VALUE(c)	values[PGS_ASH_##c]
#define ISNULL(c)	nulls[PGS_ASH_##c]

/* The lock columns (lock_target.c). */
static void
lock_values(const AshRow *row, Datum *values, bool *nulls, const bool *want)
{
	const PgsLockTarget *t = &row->lock;
	const char *name;
	Oid			relid;

	name = WANT(LOCK_TYPE) ? pgs_lock_type_name(t) : NULL;
	VALUE(LOCK_TYPE) = text_or_null(name, &ISNULL(LOCK_TYPE));
	ISNULL(LOCK_RELATION) = !pgs_lock_relation(t, &relid);
	if (!ISNULL(LOCK_RELATION))
		VALUE(LOCK_RELATION) = ObjectIdGetDatum(relid);
	name = WANT(LOCK_MODE) ? pgs_lock_mode_name(t, t->mode) : NULL;
	VALUE(LOCK_MODE) = text_or_null(name, &ISNULL(LOCK_MODE));
	ISNULL(LOCK_TARGET) = ISNULL(BLOCKER_LOCK_MODES) = true;
	if (WANT(LOCK_TARGET))
		VALUE(LOCK_TARGET) = text_or_null(pgs_lock_target_text(t),
										  &ISNULL(LOCK_TARGET));
	if (WANT(BLOCKER_LOCK_MODES))
		VALUE(BLOCKER_LOCK_MODES) =
			text_or_null(pgs_lock_blocker_modes_text(t),
						 &ISNULL(BLOCKER_LOCK_MODES));
}

static void
row_values(AshReader *rd, const AshRow *row, Datum *values, bool *nulls,
		   const bool *want)
{
	bool		visible = may_see(rd, &rd->session_role, row->usesysid);

	memset(nulls, 0, sizeof(bool) * ASH_COLS);

	/* what every reader sees */
	VALUE(ASH_TIME) = TimestampTzGetDatum(row->ash_time);
	VALUE(DATID) = ObjectIdGetDatum(row->datid);
	ISNULL(DATID) = !OidIsValid(row->datid);
	if (!WANT(DATNAME))
		ISNULL(DATNAME) = true;
	else
		VALUE(DATNAME) = cached_name(rd, &rd->dbname, row->datid,
									 database_name, &ISNULL(DATNAME));
	VALUE(PID) = Int32GetDatum(row->pid);
	VALUE(USESYSID) = ObjectIdGetDatum(row->usesysid);
	ISNULL(USESYSID) = !OidIsValid(row->usesysid);
	if (!WANT(USENAME))
		ISNULL(USENAME) = true;
	else
		VALUE(USENAME) = cached_name(rd, &rd->username, row->usesysid,
									 role_name, &ISNULL(USENAME));
	ISNULL(APPLICATION_NAME) = true;
	if (WANT(APPLICATION_NAME))
		VALUE(APPLICATION_NAME) = text_datum(rd, row->application_name,
											  &ISNULL(APPLICATION_NAME));
	VALUE(BACKEND_XID) = TransactionIdGetDatum(row->backend_xid);
	ISNULL(BACKEND_XID) = !TransactionIdIsValid(row->backend_xid);
	VALUE(BACKEND_XMIN) = TransactionIdGetDatum(row->backend_xmin);
	ISNULL(BACKEND_XMIN) = !TransactionIdIsValid(row->backend_xmin);
	VALUE(BLOCKERS) = Int32GetDatum(row->blockers);
	VALUE(BLOCKERPID) = Int32GetDatum(row->blockerpid);
	ISNULL(BLOCKERPID) = (row->blockers == 0);
	VALUE(SAMPLE_ID) = Int64GetDatum(row->sample_id);
	VALUE(SAMPLE_PERIOD) = Float8GetDatum(row->period_us / 1000000.0);
	VALUE(WEIGHT) = Float8GetDatum(pgs_row_weight(row));
	VALUE(BLOCKER_USESYSID) = ObjectIdGetDatum(row->blocker_usesysid);
	ISNULL(BLOCKER_USESYSID) = row->blockers == 0 ||
		!OidIsValid(row->blocker_usesysid);
	if (WANT(BLOCKING_PIDS))
		VALUE(BLOCKING_PIDS) = blocking_pids_datum(rd, row, &ISNULL(BLOCKING_PIDS));
	else
		ISNULL(BLOCKING_PIDS) = true;

	/* the lock it waits for: pg_locks shows it to every role */
	lock_values(row, values, nulls, want);

	/* the state of another session: as its own row would show it */
	VALUE(BLOCKER_STATE) =
		rd->state_names[Min(row->blocker_state, PGS_STATE_OTHER)];
	ISNULL(BLOCKER_STATE) = row->blockers == 0 ||
		pgs_state_name(row->blocker_state) == NULL ||
		!may_see(rd, &rd->blocker_role, row->blocker_usesysid);

	if (!visible)
	{
		VALUE(TOP_LEVEL_QUERY) = VALUE(QUERY) = rd->insufficient_privilege;
		ISNULL(LEADER_PID) = true;
		ISNULL(CLIENT_ADDR) = ISNULL(CLIENT_HOSTNAME) = ISNULL(CLIENT_PORT) = true;
		ISNULL(BACKEND_START) = ISNULL(XACT_START) = true;
		ISNULL(QUERY_START) = ISNULL(STATE_CHANGE) = true;
		ISNULL(WAIT_EVENT_TYPE) = ISNULL(WAIT_EVENT) = ISNULL(STATE) = true;
		ISNULL(CMDTYPE) = ISNULL(QUERYID) = ISNULL(NESTED_QUERYID) = true;
		ISNULL(BACKEND_TYPE) = true;
		return;
	}

	/* what only a reader who may see the session sees */
	VALUE(LEADER_PID) = Int32GetDatum(row->leader_pid);
	ISNULL(LEADER_PID) = (row->leader_pid == 0);
	ISNULL(CLIENT_ADDR) = ISNULL(CLIENT_HOSTNAME) = true;
	if (WANT(CLIENT_ADDR))
		VALUE(CLIENT_ADDR) = client_addr_datum(row, &ISNULL(CLIENT_ADDR));
	/* core shows a host name only with an IP address ("[local]": NULL) */
	if (WANT(CLIENT_HOSTNAME) && (row->client_family == AF_INET ||
					row->client_family == AF_INET6))
		VALUE(CLIENT_HOSTNAME) = text_datum(rd, row->client_hostname,
											 &ISNULL(CLIENT_HOSTNAME));
	VALUE(CLIENT_PORT) = Int32GetDatum(row->client_port);
	ISNULL(CLIENT_PORT) = (row->client_port == 0);
	VALUE(BACKEND_START) = TimestampTzGetDatum(row->backend_start);
	ISNULL(BACKEND_START) = (row->backend_start == 0);
	VALUE(XACT_START) = TimestampTzGetDatum(row->xact_start);
	ISNULL(XACT_START) = (row->xact_start == 0);
	VALUE(QUERY_START) = TimestampTzGetDatum(row->query_start);
	ISNULL(QUERY_START) = (row->query_start == 0);
	VALUE(STATE_CHANGE) = TimestampTzGetDatum(row->state_change);
	ISNULL(STATE_CHANGE) = (row->state_change == 0);
	wait_event_datums(rd, row, &VALUE(WAIT_EVENT_TYPE), &VALUE(WAIT_EVENT),
					  &ISNULL(WAIT_EVENT_TYPE));
	ISNULL(WAIT_EVENT) = ISNULL(WAIT_EVENT_TYPE);
	VALUE(STATE) = rd->state_names[Min(row->state, PGS_STATE_OTHER)];
	ISNULL(STATE) = (pgs_state_name(row->state) == NULL);
	ISNULL(TOP_LEVEL_QUERY) = ISNULL(QUERY) = true;
	if (WANT(TOP_LEVEL_QUERY))
		VALUE(TOP_LEVEL_QUERY) = text_datum(rd, row->top_level_query,
											 &ISNULL(TOP_LEVEL_QUERY));
	if (WANT(QUERY))
		VALUE(QUERY) = text_datum(rd, row->query, &ISNULL(QUERY));
	VALUE(CMDTYPE) = rd->cmdtype_names[Min(row->cmdtype, PGS_CMD_NOTHING)];
	VALUE(QUERYID) = Int64GetDatum((int64) row->queryid);
	ISNULL(QUERYID) = (row->queryid == 0);
	VALUE(NESTED_QUERYID) = Int64GetDatum((int64) row->nested_queryid);
	ISNULL(NESTED_QUERYID) = (row->nested_queryid == 0);
	if (!WANT(BACKEND_TYPE))
		ISNULL(BACKEND_TYPE) = true;
	else if (row->backend_type_name != PGS_TEXT_NONE)
		VALUE(BACKEND_TYPE) = text_datum(rd, row->backend_type_name,
										  &ISNULL(BACKEND_TYPE));
	else
	{
		if (rd->last_backend_type_name == (Datum) 0 ||
			rd->last_backend_type != row->backend_type)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(rd->cache_cxt);

			rd->last_backend_type = row->backend_type;
			rd->last_backend_type_name =
				CStringGetTextDatum(GetBackendTypeDesc((BackendType) row->backend_type));
			MemoryContextSwitchTo(oldcxt);
		}
		VALUE(BACKEND_TYPE) = rd->last_backend_type_name;
	}
}

#undef WANT
#undef VALUE
#undef ISNULL

/* Drop the datums reused across rows (they are rebuilt as needed). */
static void
reset_cache(AshReader *rd)
{
	MemoryContextReset(rd->cache_cxt);
	memset(rd->cache, 0, sizeof(TextCacheEntry) * TEXT_CACHE_SIZE);
	rd->last_backend_type_name = (Datum) 0;
	rd->dbname.name = (Datum) 0;
	rd->username.name = (Datum) 0;
	memset(rd->wait_cache, 0, sizeof(rd->wait_cache));
}

/*
 * Start reading the history: the rows of the ring that the query whose
 * memory is query_cxt reads (pgs_ring_query_bounds()).  The reader lives in
 * a context of its own under parent_cxt; pgs_ash_reader_end() frees it.
 */
AshReader *
pgs_ash_reader_begin(MemoryContext query_cxt, MemoryContext parent_cxt)
{
	MemoryContext reader_cxt;
	MemoryContext oldcxt;
	AshReader  *rd;
	PgsQueryBounds bounds;
	int			i;

	pgs_check_loaded();
	reader_cxt = AllocSetContextCreate(parent_cxt, "pgsentinel reader",
									   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(reader_cxt);
	rd = palloc0(sizeof(AshReader));
	rd->reader_cxt = reader_cxt;
	rd->cache_cxt = AllocSetContextCreate(reader_cxt, "pgsentinel reader cache",
										  ALLOCSET_DEFAULT_SIZES);
	pgs_ring_query_bounds(&pgs_state->sampler.ash, query_cxt, &bounds);
	pgs_ring_cursor_open(&rd->rows, &pgs_state->sampler.ash, bounds.first,
						 bounds.end);
	pgs_text_reader_init(&rd->text, reader_cxt, bounds.text_floor);
	rd->empty_array = PointerGetDatum(construct_empty_array(INT4OID));
	rd->insufficient_privilege = CStringGetTextDatum(INSUFFICIENT_PRIVILEGE);
	for (i = 0; i <= PGS_STATE_OTHER; i++)
	{
		const char *s = pgs_state_name((uint8) i);

		rd->state_names[i] = CStringGetTextDatum(s ? s : "");
	}
	for (i = 0; i <= PGS_CMD_NOTHING; i++)
		rd->cmdtype_names[i] = CStringGetTextDatum(pgs_cmdtype_name((uint8) i));
	rd->cache = palloc0(sizeof(TextCacheEntry) * TEXT_CACHE_SIZE);
	rd->min_sample_id = PG_INT64_MIN;
	rd->max_sample_id = PG_INT64_MAX;
	rd->read_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	MemoryContextSwitchTo(oldcxt);
	return rd;
}

/*
 * Free a reader.  Rows the sampler overwrote before the reader got to them
 * (it went round the whole ring during the scan) were skipped: say so.
 */
void
pgs_ash_reader_end(AshReader *rd)
{
	uint64		lost = rd->rows.lost;

	MemoryContextDelete(rd->reader_cxt);
	if (lost > 0)
		ereport(NOTICE,
				(errmsg("%llu rows of the active session history were overwritten before this query read them",
						(unsigned long long) lost),
				 errdetail("The sampler went around the ring of %d rows while the query ran; the query skipped those rows.",
						   (int) pgs_state->sampler.ash.capacity),
				 errhint("Read the history in shorter queries, or raise pgsentinel_ash.max_entries.")));
}

/* The next row of the ring within the reader's sample range, or NULL. */
static const AshRow *
next_row_in_range(AshReader *rd)
{
	const AshRow *row;

	while ((row = pgs_ring_cursor_next(&rd->rows)) != NULL)
	{
		if (row->sample_id > rd->max_sample_id)
			return NULL;
		if (row->sample_id >= rd->min_sample_id)
			return row;
	}
	return NULL;
}

/*
 * The next row, oldest first, into values/nulls (PGS_ASH_COLS of them, in
 * 2.0's order; see row_values for want).  Returns false after the last.
 * The values are valid until the next call; per-row allocations go to the
 * current memory context.
 */
bool
pgs_ash_reader_next(AshReader *rd, Datum *values, bool *nulls,
					const bool *want)
{
	const AshRow *row = next_row_in_range(rd);

	if (row == NULL)
		return false;
	/* the previous row is consumed: its cached datums may go */
	if (MemoryContextMemAllocated(rd->cache_cxt, false) > CACHE_MEMORY_LIMIT)
		reset_cache(rd);
	row_values(rd, row, values, nulls, want);
	return true;
}

/* Only move past the next row (a query that reads no column). */
bool
pgs_ash_reader_skip(AshReader *rd)
{
	if (rd->min_sample_id == PG_INT64_MIN && rd->max_sample_id == PG_INT64_MAX)
		return pgs_ring_cursor_skip(&rd->rows);
	return next_row_in_range(rd) != NULL;
}

/*
 * Read only the rows of samples min..max (the foreign scan's conditions on
 * sample_id): the others are passed over without computing any column, and
 * the reading stops at the first row past max, the rows being in sample
 * order.  The scan node still checks its conditions on the rows returned.
 */
void
pgs_ash_reader_set_sample_range(AshReader *rd, int64 min, int64 max)
{
	rd->min_sample_id = min;
	rd->max_sample_id = max;
}

/* Read again from the oldest row of the query. */
void
pgs_ash_reader_rewind(AshReader *rd)
{
	pgs_ring_cursor_rewind(&rd->rows);
}

/*
 * SQL function pg_active_session_history(): every row of the ring, oldest
 * first, with the columns the SQL declaration asks for.  (2.0's view reads
 * the foreign table of ash_fdw.c instead, which computes only the columns
 * a query uses and streams them; this function serves 1.4 and 1.5
 * declarations and direct calls.)
 */
static Datum
active_session_history(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AshReader  *rd;
	Datum		values[ASH_COLS];
	bool		nulls[ASH_COLS];
	int			map[PGS_MAX_COLUMNS];
	MemoryContext row_cxt;
	MemoryContext oldcxt;

	pgs_check_loaded();
	InitMaterializedSRF(fcinfo, 0);
	pgs_map_columns(rsinfo->setDesc, pgs_ash_columns, pgs_ash_column_types,
					ASH_COLS, map);
	rd = pgs_ash_reader_begin(rsinfo->econtext->ecxt_per_query_memory,
							  CurrentMemoryContext);

	/* per-row garbage goes in a context reset at every row */
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "pgsentinel rows",
									ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		bool		more;

		CHECK_FOR_INTERRUPTS();
		oldcxt = MemoryContextSwitchTo(row_cxt);
		more = pgs_ash_reader_next(rd, values, nulls, NULL);
		MemoryContextSwitchTo(oldcxt);
		if (!more)
			break;
		pgs_put_mapped(rsinfo->setResult, rsinfo->setDesc, map, values, nulls);
		MemoryContextReset(row_cxt);
	}
	MemoryContextDelete(row_cxt);
	pgs_ash_reader_end(rd);
	return (Datum) 0;
}

/* pg_active_session_history() as declared by pgsentinel 2.0. */
Datum
pg_active_session_history_2_0(PG_FUNCTION_ARGS)
{
	return active_session_history(fcinfo);
}

/* The C name pgsentinel 1.4 and 1.5 declared: their columns, by name. */
Datum
pg_active_session_history(PG_FUNCTION_ARGS)
{
	return active_session_history(fcinfo);
}
