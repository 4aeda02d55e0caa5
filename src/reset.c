/*-------------------------------------------------------------------------
 *
 * reset.c
 *		pgsentinel_reset(): empty the history as readers see it.
 *
 * Nothing is erased or rewritten: under pgs_state->lock, held exclusively
 * for a few stores, each ring's first visible row moves to its end and the
 * text area's first visible position to its head.  Readers (ring.c,
 * text_area.c) and the history saved at shutdown (persist.c) start from
 * there; the writers go on where they were, so sample ids go on and are
 * never reused.  Readings of the statements history for samples up to the
 * reset that the statements worker writes after it are hidden by their
 * sample id; a sample the sampler was taking during the reset is hidden
 * with the rest (it may refer to texts before the reset: text_area.c).
 *
 * Who may reset is the SQL privilege on the function: revoked from PUBLIC
 * by the install script, granted by a superuser, as
 * pg_stat_statements_reset().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/timestamp.h"

#include "pgsentinel.h"
#include "store/ring.h"

PG_FUNCTION_INFO_V1(pgsentinel_reset);

/* SQL function pgsentinel_reset(): returns the time of the reset. */
Datum
pgsentinel_reset(PG_FUNCTION_ARGS)
{
	TimestampTz now;

	pgs_check_loaded();
	(void) pgs_lock_exclusive();
	now = GetCurrentTimestamp();
	pg_atomic_write_u64(&pgs_state->reset.sample_id,
						(uint64) pgs_state->sampler.last_sample_id);
	pgs_ring_hide_before(&pgs_state->sampler.ash,
						 pgs_ring_written(&pgs_state->sampler.ash));
	pgs_ring_hide_before(&pgs_state->sampler.samples,
						 pgs_ring_written(&pgs_state->sampler.samples));
	pgs_ring_hide_before(&pgs_state->statements.ring,
						 pgs_ring_written(&pgs_state->statements.ring));
	pg_atomic_write_u64(&pgs_state->text.visible_from,
						pg_atomic_read_u64(&pgs_state->text.head));
	pgs_state->reset.time = now;
	/* after the rest: the sampler reads it before the text floor */
	pg_memory_barrier();
	pg_atomic_fetch_add_u64(&pgs_state->reset.count, 1);
	pgs_unlock_exclusive();

	PG_RETURN_TIMESTAMPTZ(now);
}
