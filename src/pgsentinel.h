/*-------------------------------------------------------------------------
 *
 * pgsentinel.h
 *		What all of pgsentinel shares: its names, the one shared-memory
 *		allocation (PgsSharedState, one part per subsystem) and the
 *		functions of shmem.c that lay it out and lock it.
 *
 * The locking rules are written once, at the top of shmem.c.
 *
 * Prefixes: pgs_ / Pgs / PGS_ for the whole module; pgssh_ / Pgssh for the
 * pg_stat_statements history ("pg_stat_statements history"), its ring,
 * worker and request channel (the statements/pgssh_*.c files); pgsentinel_
 * for what SQL sees.
 *
 * Each subsystem declares its types, its part of the shared state and its
 * functions in its own header, next to its files: store/ (the rings, the
 * text area, the history kept across restarts), sample/ (the backend slots,
 * the sampler and what it reads), read/ (the views), statements/ (the
 * statements history), archive/ (the archiver), fleet/; settings are in
 * guc.h, what the workers that connect to a database share in db_worker.h,
 * version differences in compat.h.  Every .c file includes postgres.h
 * first; no header does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSENTINEL_H
#define PGSENTINEL_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/lwlock.h"

#include "archive/archive.h"
#include "sample/backend_slot.h"
#include "sample/sampler.h"
#include "statements/pgssh.h"
#include "store/ash_rows.h"
#include "store/text_area.h"

#define PGS_NAME				"pgsentinel"
#define PGS_WORKER_TYPE			"pgsentinel"

/*
 * pgsentinel_reset() (reset.c): written under lock, the atomics also read
 * without it.  Readers see no statements row of a sample up to sample_id;
 * each ring and the text area have their own visible_from.
 */
typedef struct PgsResetShared
{
	pg_atomic_uint64 sample_id; /* an int64 */
	pg_atomic_uint64 count;		/* resets so far */
	TimestampTz time;			/* of the last one, 0 = none */
} PgsResetShared;

/*
 * The one shared-memory allocation.  Header first, then the ASH ring, the
 * ring of samples, the text area, the backend slots, the statements ring
 * and the request's keys, at the offsets recorded in each part.
 */
typedef struct PgsSharedState
{
	LWLock	   *lock;			/* see the rules at the top of shmem.c */

	PgsSamplerShared sampler;	/* sample/sampler.h */
	PgsTextShared text;			/* store/text_area.h */
	PgsSlotsShared slots;		/* sample/backend_slot.h */
	PgsResetShared reset;
	PgsStatementsShared statements; /* statements/pgssh.h */
	PgsArchiverShared archiver; /* archive/archive.h */
} PgsSharedState;

/* shmem.c */
extern PgsSharedState *pgs_state;
extern Size pgs_shmem_size(void);
extern void pgs_shmem_request(void);
extern bool pgs_shmem_startup(void);
extern void pgs_check_loaded(void);
extern AshRow *pgs_ash_rows(void);
extern char *pgs_text_area(void);
extern PgsBackendSlot *pgs_backend_slot(int procno);
extern PgsshRow *pgs_pgssh_rows(void);
extern PgsshKey *pgs_request_keys(void);

extern int64 pgs_lock_exclusive(void);
extern void pgs_unlock_exclusive(void);
extern void pgs_prefault(const void *start, Size size);

#endif							/* PGSENTINEL_H */
