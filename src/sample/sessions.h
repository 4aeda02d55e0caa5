/*-------------------------------------------------------------------------
 *
 * sessions.h
 *		The sampler's copies of what each session publishes: core's
 *		backend-status entries, read directly (backend_status_reader.c).
 *
 * These types are read by sampler.c and queryid_backfill.c too.  The
 * copies are the sampler's private memory: no lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_SESSIONS_H
#define PGS_SESSIONS_H

#include "datatype/timestamp.h"
#include "utils/backend_status.h"

#include "sample/backend_slot.h"
#include "store/text_area.h"

/*
 * What the sampler keeps per backend-status slot between samples (in that
 * slot's SessionCopy; unused when the snapshot is read instead).  The same
 * session (pid, backend start) with the same statement start has the same
 * statement text, and the same session the same client host name: the
 * slot's private copies from an earlier sample are still right and are not
 * read again, and the reference stored for that text is used again without
 * hashing or comparing it.  Copying the text anew drops the reference.  The
 * application name can change at any time (SET application_name): it is
 * compared with the slot's copy, and its reference kept while it is equal.
 * Texts that may change from one sample to the next without the status
 * entry changing -- the nested statement, the blocker list -- are compared
 * with the text their last reference points to (text_like_last).  The
 * first blocker's status slot is a hint, verified by pid before use.
 */
typedef struct ActivityMemo
{
	PgsTextRef	ref;			/* of the copied statement text, or none */
	PgsTextRef	appname_ref;	/* of the copied application name, or none */
	PgsTextRef	blockers_ref;	/* of the last blocker list, or none */
	PgsTextRef	nested_ref;		/* of the last nested statement, or none */
	int			blocker_slot;	/* status slot of the last first blocker */
} ActivityMemo;

/*
 * What the slot's private text copies were made from, and the lengths of
 * the texts its memo references: read only when the status entry has
 * changed (and the lengths in assertions), so kept apart from the copy
 * that every row reads.
 */
typedef struct CopyOrigin
{
	int32		copied_pid;		/* the session the copies describe, 0: none */
	TimestampTz copied_backend_start;
	TimestampTz copied_activity_start;
	uint32		len;			/* of the text memo.ref points to */
	uint32		appname_len;	/* of the text memo.appname_ref points to */
} CopyOrigin;

/*
 * What the sampler copies of one backend-status entry: only the fields a
 * row needs (not the progress counters, not the SSL/GSS pointers), so that
 * reading an entry touches as few of its cache lines as possible.  For a
 * session that is not to be sampled only pid, state, statement start and
 * query id are filled in; for one to be sampled all fields, and its texts
 * in the slot's buffers (pgs_session_texts()).
 *
 * The copy of a status slot is kept from sample to sample, and the entry's
 * st_changecount at the time it was read with it (in the slot's
 * SlotGlance).  Every change of an entry --
 * session start and end, statement, state, query id, application name,
 * progress -- goes through core's change-counter protocol and moves that
 * counter, so while it is even and the same the entry has not changed and
 * the copy is reused: a session in the same state and statement as at the
 * previous sample costs one load.  (Wait events, xid and xmin live in
 * PGPROC, which is read for every sampled row.)
 */
typedef struct SessionCopy
{
	int32		pid;
	BackendState state;
	BackendType backend_type;
	Oid			datid;
	Oid			userid;
	int32		client_port;	/* as AshRow */
	int			status_slot;	/* in core's array; -1 from the snapshot */
	uint8		client_family;
	uint8		client_addr[16];
	bool		sampled;
	bool		has_hostname;	/* its hostname text is not empty */
	TimestampTz proc_start;
	TimestampTz xact_start;
	TimestampTz activity_start;
	TimestampTz state_start;
	uint64		query_id;
	ActivityMemo memo;			/* direct reads only */
} SessionCopy;

/*
 * Every sampled row reads its slot's SessionCopy: the fields above are the
 * ones a row needs, in two cache lines (the array is aligned to a line),
 * both fetched ahead during the pass over the slots.  The texts live in
 * the slot's buffers (pgs_session_texts()), what they were copied from in a
 * CopyOrigin.
 */
StaticAssertDecl(sizeof(SessionCopy) <= 2 * PGS_FETCH_LINE_SIZE,
				 "SessionCopy must fit in the two cache lines fetched ahead");

/* backend_status_reader.c */
extern void pgs_status_reader_init(void);
extern int	pgs_read_sessions(SessionCopy **copies, const int **sampled);
extern void pgs_forget_slot_copies(void);
extern SessionCopy *pgs_session_by_pid(int32 pid);
extern bool pgs_complete_session(SessionCopy *s);
extern struct PGPROC *pgs_session_proc(const SessionCopy *s);
extern int	pgs_session_number(const SessionCopy *s);
extern void pgs_session_texts(const SessionCopy *s, char **appname,
							  char **hostname, char **activity);
extern ActivityMemo *pgs_session_memo(const SessionCopy *s,
									  CopyOrigin **origin);
extern SessionCopy *pgs_blocker_session(ActivityMemo *memo, int32 pid);

#endif							/* PGS_SESSIONS_H */
