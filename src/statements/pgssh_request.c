/*-------------------------------------------------------------------------
 *
 * pgssh_request.c
 *		The sampler's side of the statements history: which statements to
 *		read at each sample, the request handed to the statements worker,
 *		and the supervision of that worker.
 *
 * At each sample the sampler collects the (dbid, queryid) of the
 * top-level and of the executing statement of every sampled session, adds
 * the statements seen at the previous sample that are no longer running
 * (their last execution only reaches pg_stat_statements when it ends), and
 * publishes this list with the sample's id and time.  The statements worker
 * (pgssh_worker.c) reads pg_stat_statements for exactly those statements.
 *
 * The statements worker needs a database connection; the sampler does not
 * and never depends on it.  The sampler launches it as a dynamic background
 * worker, and launches it again, with a growing delay, if it exits.  Every
 * state change is logged once and shown by pgsentinel_status().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "db_worker.h"
#include "guc.h"
#include "pgsentinel.h"
#include "statements/pgssh.h"
#include "store/ash_rows.h"

/* Sampler-private state. */
static PgsshKey *prev_keys = NULL;	/* statements of the previous sample */
static int	nprev_keys = 0;
static PgsshKey *merged_keys = NULL;
static PgsshKey *published_keys = NULL;	/* the last request published */
static PgsshKey *union_keys = NULL; /* room for two requests */
static uint64 keys_dropped = 0;	/* not yet added to the shared counter */
static int	npublished = 0;
static uint64 published_seq = 0;
static TimestampTz last_sweep_time = 0;	/* of the last sweep asked for */
static bool worker_expected = false;	/* a worker will take requests */
static bool history_expected = false;	/* and it is serving, or starting */
static PgsWorkerLauncher launcher = {
	"pgsentinel_pgssh_main", "pgsentinel statements"
};

static bool pgss_preloaded(void);

/* Words for the states, as pgsentinel_status() shows them. */
const char *
pgssh_state_name(int state)
{
	switch (state)
	{
		case PGSSH_DISABLED:
			return "disabled";
		case PGSSH_NOT_LOADED:
			return "pg_stat_statements not loaded";
		case PGSSH_STARTING:
			return "starting";
		case PGSSH_NOT_CONNECTED:
			return "cannot connect";
		case PGSSH_NOT_CREATED:
			return "pg_stat_statements not created";
		case PGSSH_INCOMPATIBLE:
			return "pg_stat_statements incompatible";
		case PGSSH_FAILING:
			return "failing";
		case PGSSH_OK:
			return "ok";
		default:
			return "unknown";
	}
}

/*
 * Record a new state of the statements history; log it once, when it
 * changes, so that a broken setup leaves one line, not one per period.
 */
void
pgssh_set_state(PgsshState state, const char *message)
{
	bool		changed;

	(void) pgs_lock_exclusive();
	changed = pgs_state->statements.state != (int) state ||
		strncmp(pgs_state->statements.message, message,
				PGS_MESSAGE_LEN - 1) != 0;
	pgs_state->statements.state = (int) state;
	strlcpy(pgs_state->statements.message, message, PGS_MESSAGE_LEN);
	pgs_unlock_exclusive();

	/* a setup that lacks pg_stat_statements is a choice: LOG; failures: WARNING */
	if (changed && state != PGSSH_STARTING)
		ereport(state == PGSSH_FAILING || state == PGSSH_INCOMPATIBLE ||
				state == PGSSH_NOT_CONNECTED ? WARNING : LOG,
				(errmsg("pgsentinel statements history: %s", message)));
}

/* The current state, read under the lock. */
static int
current_state(void)
{
	int			state;

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	state = pgs_state->statements.state;
	LWLockRelease(pgs_state->lock);
	return state;
}

/* Sampler start-up: private buffers. */
void
pgssh_sampler_init(void)
{
	prev_keys = MemoryContextAlloc(TopMemoryContext,
								   sizeof(PgsshKey) *
								   pgs_state->statements.request_max_keys);
	merged_keys = MemoryContextAlloc(TopMemoryContext,
									 sizeof(PgsshKey) *
									 pgs_state->statements.request_max_keys);
	published_keys = MemoryContextAlloc(TopMemoryContext,
										sizeof(PgsshKey) *
										pgs_state->statements.request_max_keys);
	union_keys = MemoryContextAlloc(TopMemoryContext,
									sizeof(PgsshKey) * 2 *
									pgs_state->statements.request_max_keys);
}

/* Order of keys: queryid, then dbid. */
static int
key_cmp(const void *a, const void *b)
{
	const PgsshKey *ka = a;
	const PgsshKey *kb = b;

	if (ka->queryid != kb->queryid)
		return ka->queryid < kb->queryid ? -1 : 1;
	if (ka->dbid != kb->dbid)
		return ka->dbid < kb->dbid ? -1 : 1;
	return 0;
}

/* Sort and remove duplicates; returns the new count. */
static int
sort_unique(PgsshKey *keys, int n)
{
	int			i;
	int			out = 0;

	if (n <= 1)
		return n;
	qsort(keys, n, sizeof(PgsshKey), key_cmp);
	for (i = 0; i < n; i++)
		if (out == 0 || key_cmp(&keys[out - 1], &keys[i]) != 0)
			keys[out++] = keys[i];
	return out;
}

/* The union of two sorted key lists, at most max keys, into out. */
static int
merge_keys(const PgsshKey *a, int na, const PgsshKey *b, int nb,
		   PgsshKey *out, int max)
{
	int			i = 0;
	int			j = 0;
	int			n = 0;

	while ((i < na || j < nb) && n < max)
	{
		int			c;

		if (i >= na)
			c = 1;
		else if (j >= nb)
			c = -1;
		else
			c = key_cmp(&a[i], &b[j]);
		if (c <= 0)
			out[n++] = a[i++];
		else
			out[n++] = b[j];
		if (c >= 0)
			j++;
	}
	return n;
}

/* Is key in the sorted list? */
static bool
key_in(const PgsshKey *key, const PgsshKey *list, int n)
{
	return n > 0 &&
		bsearch(key, list, n, sizeof(PgsshKey), key_cmp) != NULL;
}

/*
 * The request that replaces one the worker has not taken: the union of
 * both (sorted, into out, at most max keys).  If it does not fit, the
 * statements still running (current: this sample's own keys) give way
 * first -- they are asked for again at the next sample -- so that the
 * final readings of statements that have gone are kept; what still does
 * not fit is counted in keys_dropped when count_dropped (not while the
 * history is knowingly off, e.g. pg_stat_statements not created: the
 * status says so, and a count growing for days would say nothing more).
 */
static int
carry_over(const PgsshKey *merged, int nmerged, const PgsshKey *untaken,
		   int nuntaken, const PgsshKey *current, int ncurrent,
		   PgsshKey *out, int max, bool count_dropped)
{
	int			nunion = merge_keys(merged, nmerged, untaken, nuntaken,
									union_keys, 2 * max);
	int			n = 0;
	int			i;

	if (nunion <= max)
	{
		memcpy(out, union_keys, sizeof(PgsshKey) * nunion);
		return nunion;
	}
	/* gone statements first, then running ones while there is room */
	for (i = 0; i < nunion; i++)
		if (!key_in(&union_keys[i], current, ncurrent))
		{
			if (n < max)
				out[n++] = union_keys[i];
			else if (count_dropped)
				keys_dropped++;
		}
	for (i = 0; i < nunion && n < max; i++)
		if (key_in(&union_keys[i], current, ncurrent))
			out[n++] = union_keys[i];
	return sort_unique(out, n);
}

/*
 * The statements to read at this sample, sorted, into keys (room for
 * request_max_keys): those of the sampled sessions, and those of the
 * previous sample that are gone.  Returns the count (0 when the history is
 * off).
 */
int
pgssh_collect_keys(const AshRow *rows, int nrows, PgsshKey *keys)
{
	int			max = pgs_state->statements.request_max_keys;
	int			n = 0;
	int			i;
	int			nmerged;

	/* nothing to ask for when no statements worker can ever serve it */
	if (!pgs_pgssh_enable || pgs_pgssh_max_entries <= 0 || !pgss_preloaded())
	{
		nprev_keys = 0;
		npublished = 0;
		return 0;
	}

	for (i = 0; i < nrows && n + 2 <= max / 2; i++)
	{
		const AshRow *r = &rows[i];

		if (r->queryid != 0)
		{
			keys[n].queryid = r->queryid;
			keys[n].dbid = r->datid;
			n++;
		}
		if (r->nested_queryid != 0 && r->nested_queryid != r->queryid)
		{
			keys[n].queryid = r->nested_queryid;
			keys[n].dbid = r->datid;
			n++;
		}
	}
	n = sort_unique(keys, n);

	/* with the previous sample's statements that are gone: read once more */
	nmerged = merge_keys(keys, n, prev_keys, nprev_keys, merged_keys, max);

	/* this sample's own statements become the next "previous" */
	memcpy(prev_keys, keys, sizeof(PgsshKey) * n);
	nprev_keys = n;

	/*
	 * The statements worker serves the newest request only.  If it has not
	 * taken the last one yet (it rests after each reading, fell behind, is
	 * starting, or waits for pg_stat_statements to be created), this request
	 * replaces it: carry its statements over, so that no final reading of a
	 * statement that has gone is lost.
	 */
	if (worker_expected && npublished > 0 &&
		pg_atomic_read_u64(&pgs_state->statements.request_taken_seq) <
		published_seq)
		nmerged = carry_over(merged_keys, nmerged, published_keys, npublished,
							 prev_keys, nprev_keys, keys, max,
							 history_expected);
	else
		memcpy(keys, merged_keys, sizeof(PgsshKey) * nmerged);
	memcpy(published_keys, keys, sizeof(PgsshKey) * nmerged);
	npublished = nmerged;
	return nmerged;
}

/*
 * Is a sweep due at the sample taken at now?  A sweep reads every statement
 * of pg_stat_statements and keeps those whose counters changed since the
 * previous sweep (pgssh_worker.c), so that the calls of statements that no
 * sample sees reach the history too: the first at the first sample, then
 * one every pgsentinel_pgssh.sweep_interval (sooner if the clock went back).
 */
bool
pgssh_sweep_due(TimestampTz now)
{
	if (!pgs_pgssh_enable || pgs_pgssh_max_entries <= 0 ||
		pgs_pgssh_sweep_interval_s <= 0 || !pgss_preloaded())
		return false;
	if (last_sweep_time != 0 && now >= last_sweep_time &&
		now < last_sweep_time + (int64) pgs_pgssh_sweep_interval_s * USECS_PER_SEC)
		return false;
	last_sweep_time = now;
	return true;
}

/*
 * Publish the request of this sample: its statements, and whether it asks
 * for a sweep (which stays asked for until the worker takes a request, as
 * the statements of a request it did not take are carried over).  The
 * caller holds pgs_state->lock exclusively: copies and stores only.
 */
void
pgssh_publish_request_locked(const PgsshKey *keys, int nkeys, bool sweep,
							 int64 sample_id, TimestampTz ash_time)
{
	if (nkeys == 0 && !sweep)
		return;
	if (sweep)
		pgs_state->statements.request_sweep = true;
	memcpy(pgs_request_keys(), keys, sizeof(PgsshKey) * nkeys);
	pgs_state->statements.request_nkeys = nkeys;
	pgs_state->statements.request_sample_id = sample_id;
	pgs_state->statements.request_ash_time = ash_time;
	pgs_state->statements.request_seq++;
	pgs_state->statements.keys_dropped += keys_dropped;
	keys_dropped = 0;
	published_seq = pgs_state->statements.request_seq;
}

/* Wake the statements worker after a request was published. */
void
pgssh_notify(void)
{
	Latch	   *latch;

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	latch = pgs_state->statements.latch;
	LWLockRelease(pgs_state->lock);
	if (latch != NULL)
		SetLatch(latch);
}

/*
 * Is pg_stat_statements in shared_preload_libraries?  That setting only
 * changes at restart, so the answer is computed once.
 */
static bool
pgss_preloaded(void)
{
	static int	cached = -1;
	char	   *libs;
	List	   *names = NIL;
	ListCell   *lc;
	bool		found = false;

	if (cached >= 0)
		return cached == 1;
	libs = pstrdup(GetConfigOption("shared_preload_libraries", false, false));
	if (SplitIdentifierString(libs, ',', &names))
	{
		foreach(lc, names)
		{
			const char *name = lfirst(lc);
			const char *base = strrchr(name, '/');

			base = base ? base + 1 : name;
			if (strncmp(base, "pg_stat_statements", 18) == 0 &&
				(base[18] == '\0' || strcmp(base + 18, ".so") == 0))
				found = true;
		}
	}
	list_free(names);
	pfree(libs);
	cached = found ? 1 : 0;
	return found;
}

/*
 * Called by the sampler after each sample: keep the statements worker
 * running while the history is wanted and possible.
 */
void
pgssh_supervise(void)
{
	int			state = current_state();

	/*
	 * A worker that runs takes requests sooner or later; one that cannot
	 * connect, or none at all, will not.
	 */
	worker_expected = (state == PGSSH_OK || state == PGSSH_STARTING ||
					   state == PGSSH_NOT_CREATED || state == PGSSH_INCOMPATIBLE ||
					   state == PGSSH_FAILING);
	history_expected = (state == PGSSH_OK || state == PGSSH_STARTING);
	if (!pgs_pgssh_enable)
	{
		if (state != PGSSH_DISABLED)
			pgssh_set_state(PGSSH_DISABLED,
							"disabled by pgsentinel_pgssh.enable = off");
		return;
	}
	if (!pgss_preloaded())
	{
		if (state != PGSSH_NOT_LOADED)
			pgssh_set_state(PGSSH_NOT_LOADED,
							"pg_stat_statements is not in shared_preload_libraries: add it there and restart the server");
		return;
	}
	if (state == PGSSH_DISABLED ||
		state == PGSSH_NOT_LOADED)
		pgssh_set_state(PGSSH_STARTING, "starting");

	switch (pgs_supervise_db_worker(&launcher, state == PGSSH_OK))
	{
		case PGS_LAUNCH_RUNNING:
		case PGS_LAUNCH_WAITING:
			return;
		case PGS_LAUNCH_EXITED:
			/* it exited while connecting: why, as far as we can tell */
			if (state == PGSSH_STARTING)
			{
				char		msg[PGS_MESSAGE_LEN];

				snprintf(msg, sizeof(msg),
						 "could not connect to database \"%s\" (pgsentinel.db_name): create it or set pgsentinel.db_name to an existing database and restart",
						 pgs_db_name);
				pgssh_set_state(PGSSH_NOT_CONNECTED, msg);
			}
			return;
		case PGS_LAUNCH_NO_SLOT:
			pgssh_set_state(PGSSH_NOT_CONNECTED,
							"no background worker slot is free for the statements worker: raise max_worker_processes");
			return;
		case PGS_LAUNCH_LAUNCHED:
			break;
	}
	if (state != PGSSH_NOT_CONNECTED)
		pgssh_set_state(PGSSH_STARTING, "starting");
}
