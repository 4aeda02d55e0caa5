/*-------------------------------------------------------------------------
 *
 * status.c
 *		pgsentinel_status(): one row that tells a DBA whether sampling works
 *		and, when the history is empty or short, why.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pgsentinel.h"

PG_FUNCTION_INFO_V1(pgsentinel_status_2_0);

#define STATUS_COLS 33

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
	char		pgssh_message[PGSSH_MESSAGE_LEN];
	int32		pgssh_pid;
	uint64		pgssh_written;
	uint64		pgssh_rows;		/* visible */
	uint64		pgssh_samples;
	int64		pgssh_last_us;
	int64		pgssh_max_us;
	uint64		requests_skipped;
	uint64		keys_dropped;
	uint64		blockers_via_core;
} StatusCopy;

/* Copy the status fields under the shared lock. */
static void
status_copy_out(StatusCopy *c)
{
	uint64		capacity = pgs_state->ash.capacity;
	uint64		ash_from;
	uint64		text_head;

	LWLockAcquire(pgs_state->lock, LW_SHARED);
	c->worker_pid = pgs_state->worker_pid;
	c->worker_started = pgs_state->worker_started;
	c->samples_taken = pgs_state->samples_taken;
	c->last_sample_time = pgs_state->last_sample_time;
	c->last_sample_us = pgs_state->last_sample_us;
	c->max_sample_us = pgs_state->max_sample_us;
	c->max_lock_wait_us = pgs_state->max_lock_wait_us;
	c->ash_written = pgs_ring_written(&pgs_state->ash);
	c->ash_rows = pgs_ring_visible_rows(&pgs_state->ash);
	ash_from = pg_atomic_read_u64(&pgs_state->ash.visible_from);
	c->ash_wrapped = c->ash_written > capacity &&
		c->ash_written - capacity > ash_from;
	c->reset_time = pgs_state->reset_time;
	c->oldest_time = 0;
	if (c->ash_rows > 0)
	{
		uint64		oldest = c->ash_written - c->ash_rows;

		c->oldest_time = pgs_ash_rows()[oldest % capacity].ash_time;
	}
	text_head = pg_atomic_read_u64(&pgs_state->text_head);
	c->text_used = text_head - Min(text_head, pgs_text_visible_tail());
	c->texts_stored = pgs_state->texts_stored;
	c->texts_dropped = pgs_state->texts_dropped;
	c->rows_backfilled = pgs_state->rows_backfilled;
	c->blockers_via_core = pgs_state->blockers_via_core;
	c->sample_overruns = pgs_state->sample_overruns;
	c->period = pgs_state->worker_period;
	c->track_idle_trans = pgs_state->worker_track_idle_trans;
	c->pgssh_state = pgs_state->pgssh_state;
	memcpy(c->pgssh_message, pgs_state->pgssh_message, PGSSH_MESSAGE_LEN);
	c->pgssh_pid = pgs_state->pgssh_pid;
	c->pgssh_written = pgs_ring_written(&pgs_state->pgssh);
	c->pgssh_rows = pgs_ring_visible_rows(&pgs_state->pgssh);
	c->pgssh_samples = pgs_state->pgssh_samples;
	c->pgssh_last_us = pgs_state->pgssh_last_us;
	c->pgssh_max_us = pgs_state->pgssh_max_us;
	c->requests_skipped = pgs_state->requests_skipped;
	c->keys_dropped = pgs_state->pgssh_keys_dropped;
	LWLockRelease(pgs_state->lock);
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
	return buf.data;
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
	values[i++] = Int32GetDatum((int32) pgs_state->ash.capacity);
	values[i++] = Int64GetDatum((int64) c.ash_written);
	values[i] = TimestampTzGetDatum(c.oldest_time);
	nulls[i++] = (c.oldest_time == 0);
	values[i++] = Int64GetDatum((int64) c.text_used);
	values[i++] = Int64GetDatum((int64) pgs_state->text_size);
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
	values[i++] = Int32GetDatum((int32) pgs_state->pgssh.capacity);
	values[i++] = Int64GetDatum((int64) c.pgssh_samples);
	values[i] = Int64GetDatum(c.pgssh_last_us);
	nulls[i++] = (c.pgssh_samples == 0);
	values[i] = Int64GetDatum(c.pgssh_max_us);
	nulls[i++] = (c.pgssh_samples == 0);
	values[i++] = Int64GetDatum((int64) c.requests_skipped);
	values[i++] = Int64GetDatum((int64) c.keys_dropped);
	values[i++] = CStringGetTextDatum(diagnosis(&c, now));
	Assert(i == STATUS_COLS);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
