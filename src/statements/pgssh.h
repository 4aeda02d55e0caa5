/*-------------------------------------------------------------------------
 *
 * pgssh.h
 *		The pg_stat_statements history: its rows, its part of the shared
 *		state, the sampler's request (pgssh_request.c), the statements
 *		worker that serves it (pgssh_worker.c) and the view
 *		(pgssh_view.c).
 *
 * The statements worker is the one writer of the statements ring; the
 * sampler writes the request.  The locking rules are written once, at the
 * top of shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_PGSSH_H
#define PGS_PGSSH_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/latch.h"

#include "db_worker.h"
#include "store/ash_rows.h"
#include "store/ring.h"

/*
 * One row of pg_stat_statements history: the counters of one statement
 * (userid, dbid, queryid, toplevel) at the moment of one ASH sample.
 */
typedef struct PgsshRow
{
	int64		sample_id;
	TimestampTz ash_time;
	uint64		queryid;
	Oid			userid;
	Oid			dbid;
	bool		toplevel;
	int64		calls;
	int64		rows;
	int64		plans;
	int64		shared_blks_hit;
	int64		shared_blks_read;
	int64		shared_blks_dirtied;
	int64		shared_blks_written;
	int64		local_blks_hit;
	int64		local_blks_read;
	int64		local_blks_dirtied;
	int64		local_blks_written;
	int64		temp_blks_read;
	int64		temp_blks_written;
	int64		wal_records;
	int64		wal_fpi;
	int64		wal_bytes;
	double		total_exec_time;
	double		total_plan_time;
	double		blk_read_time;
	double		blk_write_time;
} PgsshRow;

/*
 * A statement the sampler asks the statements worker to read: its query id
 * in a database, for every user pg_stat_statements recorded it under (the
 * current user, which SET ROLE and SECURITY DEFINER functions change, not
 * the session's user that the sampler sees).
 */
typedef struct PgsshKey
{
	uint64		queryid;
	Oid			dbid;
} PgsshKey;

/* What the statements history is doing, for pgsentinel_status(). */
typedef enum PgsshState
{
	PGSSH_DISABLED = 0,			/* pgsentinel_pgssh.enable is off */
	PGSSH_NOT_LOADED,			/* pg_stat_statements not preloaded */
	PGSSH_STARTING,				/* worker launched, connecting */
	PGSSH_NOT_CONNECTED,		/* worker could not connect to db_name */
	PGSSH_NOT_CREATED,			/* extension missing in db_name */
	PGSSH_INCOMPATIBLE,			/* its columns are not what we read */
	PGSSH_FAILING,				/* reading it raised an error */
	PGSSH_OK
} PgsshState;

/*
 * The statements history's part of PgsSharedState.
 */
typedef struct PgsStatementsShared
{
	/*
	 * Statements ring: written by the statements worker under lock, read
	 * without it (ring.c).
	 */
	PgsRing		ring;

	/* Sampler's request to the statements worker: protected by lock. */
	Size		request_offset; /* of its keys, from pgs_state; fixed */
	int			request_max_keys;	/* fixed at startup */
	uint64		request_seq;	/* bumped by each new request */
	pg_atomic_uint64 request_taken_seq; /* the last one the worker took */
	int64		request_sample_id;
	TimestampTz request_ash_time;
	int			request_nkeys;
	bool		request_sweep;	/* a sweep is asked for (pgssh_worker.c) */

	/* Statements worker status: protected by lock. */
	int32		pid;
	Latch	   *latch;
	int			state;			/* PgsshState */
	char		message[PGS_MESSAGE_LEN];
	uint64		samples;
	int64		last_us;
	int64		max_us;
	uint64		requests_skipped;	/* merged into a later one, not read */
	uint64		keys_dropped;	/* final readings lost: request full */
} PgsStatementsShared;

/* pgssh_request.c: the sampler's side */
extern void pgssh_sampler_init(void);
extern int	pgssh_collect_keys(const AshRow *rows, int nrows, PgsshKey *keys);
extern bool pgssh_sweep_due(TimestampTz now);
extern void pgssh_publish_request_locked(const PgsshKey *keys, int nkeys,
										 bool sweep, int64 sample_id,
										 TimestampTz ash_time);
extern void pgssh_notify(void);
extern void pgssh_supervise(void);
extern void pgssh_set_state(PgsshState state, const char *message);
extern const char *pgssh_state_name(int state);

/* pgssh_worker.c */
extern PGDLLEXPORT void pgsentinel_pgssh_main(Datum main_arg);

#endif							/* PGS_PGSSH_H */
