/*-------------------------------------------------------------------------
 *
 * ash_rows.h
 *		The records of the active session history: a row of the ASH ring
 *		(one session in one sample) and a row of the ring of samples (one
 *		sample).
 *
 * Both are fixed-size and hold no pointer: they are copied between
 * processes, saved across restarts (persist.c, which checks their sizes)
 * and archived as they are.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_ASH_ROWS_H
#define PGS_ASH_ROWS_H

#include "datatype/timestamp.h"

#include "store/text_area.h"

/* Session state, as far as ASH cares (decoded to pg_stat_activity's words). */
typedef enum PgsState
{
	PGS_STATE_ACTIVE = 1,
	PGS_STATE_FASTPATH,
	PGS_STATE_IDLE_IN_XACT,
	PGS_STATE_IDLE_IN_XACT_ABORTED,
	PGS_STATE_IDLE,
	PGS_STATE_OTHER
} PgsState;

/* Command types, in 1.4's words (see cmdtype_name() in ash_view.c). */
typedef enum PgsCmdType
{
	PGS_CMD_UNKNOWN = 0,
	PGS_CMD_SELECT,
	PGS_CMD_UPDATE,
	PGS_CMD_INSERT,
	PGS_CMD_DELETE,
	PGS_CMD_MERGE,
	PGS_CMD_UTILITY,
	PGS_CMD_NOTHING
} PgsCmdType;

/*
 * The heavyweight lock a session waits for, as the sampler found it in the
 * lock manager (blockers.c): core's lock tag, the mode requested, and what
 * the first blocker (AshRow.blockerpid) held and awaited on that lock.  All
 * zero when the row waits for no lock, or when the lock was not read (a
 * lock group's waits are resolved by core's pg_blocking_pids()).
 */
typedef struct PgsLockTarget
{
	uint32		field1;			/* LOCKTAG's fields, as pg_locks reads them */
	uint32		field2;
	uint32		field3;
	uint16		field4;
	uint8		type;			/* LockTagType + 1; 0 = no lock */
	uint8		method;			/* LOCKMETHODID: default or user (advisory) */
	uint8		mode;			/* LOCKMODE requested */
	uint8		blocker_wait_mode;	/* LOCKMODE the blocker awaits, or 0 */
	uint16		blocker_hold_mask;	/* LOCKMASK the blocker holds */
} PgsLockTarget;

/*
 * One row of active session history.  Fixed size, no pointers: texts live
 * in the text area, names are resolved from OIDs when read, the wait event
 * is kept as core's 32-bit code.
 */
typedef struct AshRow
{
	int64		sample_id;
	TimestampTz ash_time;
	TimestampTz backend_start;
	TimestampTz xact_start;
	TimestampTz query_start;
	TimestampTz state_change;
	uint64		queryid;		/* top-level statement, 0 = unknown */
	uint64		nested_queryid; /* statement actually executing */
	PgsTextRef	application_name;
	PgsTextRef	client_hostname;
	PgsTextRef	top_level_query;
	PgsTextRef	query;
	PgsTextRef	blocking_pids;	/* int32 array */
	PgsTextRef	backend_type_name;	/* background workers only */
	int32		pid;
	int32		leader_pid;		/* 0 = none */
	int32		client_port;	/* 0 = none, -1 = Unix socket */
	int32		blockers;
	int32		blockerpid;
	Oid			datid;
	Oid			usesysid;
	Oid			blocker_usesysid;	/* role of blockerpid, for blocker_state */
	uint32		wait_event_info;
	TransactionId backend_xid;
	TransactionId backend_xmin;
	uint8		client_addr[16];
	uint8		client_family;	/* 0, AF_INET or AF_INET6 */
	uint8		state;			/* PgsState */
	uint8		blocker_state;	/* PgsState of blockerpid, 0 = unknown */
	uint8		cmdtype;		/* PgsCmdType */
	uint8		backend_type;	/* core's BackendType */
	uint32		period_us;		/* sampling period of its sample: its weight */
	PgsLockTarget lock;			/* the lock waited for, if any */
} AshRow;

StaticAssertDecl(sizeof(PgsLockTarget) == 20, "a lock target has no padding");
StaticAssertDecl(sizeof(AshRow) == 208,
				 "the lock target takes 20 bytes and 4 of padding");

/*
 * The DB time a row stands for, in seconds: its sample's period if the
 * session was active, 0 if it was sampled while idle (in transaction) --
 * with track_idle_trans, or because it blocked a sampled session.  What
 * every load figure sums (the view's weight column, the archive's rollups).
 */
static inline double
pgs_row_weight(const AshRow *row)
{
	if (row->state == PGS_STATE_ACTIVE || row->state == PGS_STATE_FASTPATH)
		return row->period_us / 1000000.0;
	return 0.0;
}

/*
 * One sample, whether or not it found an active session: what makes
 * average active sessions exact.  A row of the ASH ring stands for
 * period_us of one session's time.
 */
typedef struct PgsSampleRow
{
	int64		sample_id;
	TimestampTz sample_time;	/* the ash_time of its rows */
	int64		period_us;		/* sampling period it was taken at */
	int32		nrows;			/* rows it wrote to the ASH ring */
	int32		nactive;		/* of them, those of active sessions */
} PgsSampleRow;

#endif							/* PGS_ASH_ROWS_H */
