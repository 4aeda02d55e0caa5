/*-------------------------------------------------------------------------
 *
 * sampler.h
 *		The sampler worker (sampler.c), what it writes in shared memory,
 *		and the parts of a sample it gets from queryid_backfill.c (query
 *		ids completed after the fact) and blockers.c (the blockers of its
 *		lock waiters).
 *
 * The sampler is the one writer of the ASH ring, the ring of samples and
 * the text area.  The locking rules are written once, at the top of
 * shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_SAMPLER_H
#define PGS_SAMPLER_H

#include "datatype/timestamp.h"

#include "sample/sessions.h"
#include "store/ash_rows.h"
#include "store/ring.h"

/*
 * The sampler's part of PgsSharedState.
 */
typedef struct PgsSamplerShared
{
	/*
	 * ASH ring and the ring of samples: written under lock, read without it
	 * (ring.c).  history_id names this history: random when shared memory
	 * is created empty, restored with the rows at a restart (persist.c);
	 * the archive watermark holds it, so that a history that starts again
	 * (after a crash, on a promoted standby) is recognized.
	 */
	PgsRing		ash;
	PgsRing		samples;
	int64		last_sample_id; /* protected by lock */
	uint64		history_id;		/* set at startup */

	/*
	 * The oldest sample with rows still waiting for their statement's query
	 * id (queryid_backfill.c), 0 if none, and its time: the archiver leaves
	 * it and the samples after it in the ring for a while (archive_step.c).
	 * Protected by lock.
	 */
	int64		pending_sample_id;
	TimestampTz pending_sample_time;

	/* Worker status: protected by lock. */
	int32		pid;			/* 0 when not running */
	TimestampTz started;
	uint64		samples_taken;
	TimestampTz last_sample_time;
	int64		last_sample_us; /* duration of the last sample */
	int64		max_sample_us;
	int64		max_lock_wait_us;	/* longest wait of the sampler for lock */
	uint64		rows_backfilled;	/* query ids completed after the fact */
	uint64		blockers_via_core;	/* lock waits given to pg_blocking_pids() */
	uint64		sample_overruns;	/* samples later than one period */
	double		period;			/* settings as the sampler last read them */
	bool		track_idle_trans;
} PgsSamplerShared;

/* sampler.c */
extern void pgs_register_worker(void);
extern PGDLLEXPORT void pgsentinel_main(Datum main_arg);

/*
 * queryid_backfill.c, the sampler's side: rows recorded without a query
 * id, completed from the backends' answers (sample/backend_slot.h).
 */
typedef struct PgsBackfill PgsBackfill;

extern void pgs_backfill_init(void);
extern bool pgs_room_for_pending(void);
extern void pgs_remember_pending(const AshRow *row, const SessionCopy *local,
								 uint64 row_index);
/*
 * Samples with rows still waiting for their statement's query id (a lock
 * waited for while the statement was parsed) stay out of the archive, with
 * those after them, until the query ids are known, for at most this long:
 * the sampler completes the rows in the ring, and the archive would keep
 * them without.
 */
#define PGS_ARCHIVE_HOLD_MAX_MS	(60 * 1000)
extern int64 pgs_oldest_pending_sample(TimestampTz *sample_time,
									   TimestampTz newer_than);
extern int	pgs_find_backfills(PgsBackfill **fills, uint64 ash_written,
							   int64 sample_id);
extern void pgs_apply_backfills(const PgsBackfill *fills, int nfills,
								uint64 ash_written);

/* blockers.c: the blockers of a sample's lock waiters, in one pass */
typedef struct PgsLockWaiter
{
	struct PGPROC *proc;		/* in: the waiter */
	int32		pid;			/* in */
	int			row;			/* in: the caller's row number */
	int			nblockers;		/* out: 0 = no longer waiting */
	int			list_len;		/* private: see pgs_blocker_list() */
	int			first_blocker;	/* private */
	struct LOCK *lock;			/* private */
	int			group;			/* private */
	int			self;			/* private */
	int			mode;			/* private */
	bool		resolved;		/* private */
	bool		alone;			/* private: leads a lock group of itself */
	int			blocker_inst;	/* private: the first blocker's PROCLOCK copy */
	PgsLockTarget target;		/* out: the lock, zero if not read */
} PgsLockWaiter;
extern void pgs_blockers_init(void);
extern int	pgs_find_blockers(PgsLockWaiter *waiters, int nwaiters, int *order);
extern const int32 *pgs_blocker_list(const PgsLockWaiter *w, int *list_len);

#endif							/* PGS_SAMPLER_H */
