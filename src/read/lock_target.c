/*-------------------------------------------------------------------------
 *
 * lock_target.c
 *		The heavyweight lock a row waits for, in pg_locks' words: its type,
 *		its relation, the rest of its tag, the mode requested, and the modes
 *		the first blocker holds on it.
 *
 * The sampler copies the awaited lock's tag and modes (PgsLockTarget, in
 * src/store/ash_rows.h); they are read as pg_locks reads a LOCKTAG
 * (lockfuncs.c), and anything out of range reads as NULL, never as an
 * index into core's name arrays.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "storage/lock.h"

#include "read/views.h"

/* The lock's LockTagType, or -1 if the row waits for none we read. */
static int
lock_type(const PgsLockTarget *t)
{
	if (t->type == 0 || t->type - 1 > LOCKTAG_LAST_TYPE)
		return -1;
	return t->type - 1;
}

/* pg_locks.locktype of the lock ("relation", "tuple", ...), or NULL. */
const char *
pgs_lock_type_name(const PgsLockTarget *t)
{
	int			type = lock_type(t);

	return type < 0 ? NULL : LockTagTypeNames[type];
}

/* The relation a relation, extension, page or tuple lock is on. */
bool
pgs_lock_relation(const PgsLockTarget *t, Oid *relid)
{
	switch (lock_type(t))
	{
		case LOCKTAG_RELATION:
		case LOCKTAG_RELATION_EXTEND:
		case LOCKTAG_PAGE:
		case LOCKTAG_TUPLE:
			*relid = (Oid) t->field2;
			return true;
		default:
			return false;
	}
}

/*
 * The rest of the lock's tag, as pg_locks' other columns would show it:
 * "page 3", "tuple (3,7)", "transaction 1234", ...; NULL for a lock whose
 * relation (or database) says all.  Palloc'd.
 */
char *
pgs_lock_target_text(const PgsLockTarget *t)
{
	switch (lock_type(t))
	{
		case LOCKTAG_PAGE:
			return psprintf("page %u", t->field3);
		case LOCKTAG_TUPLE:
			return psprintf("tuple (%u,%u)", t->field3, (unsigned) t->field4);
		case LOCKTAG_TRANSACTION:
			return psprintf("transaction %u", t->field1);
		case LOCKTAG_VIRTUALTRANSACTION:
			return psprintf("virtual transaction %d/%u",
							(int) t->field1, t->field2);
		case LOCKTAG_SPECULATIVE_TOKEN:
			return psprintf("speculative insertion %u, token %u",
							t->field1, t->field2);
		case LOCKTAG_OBJECT:
			return psprintf("object %u/%u/%u",
							t->field2, t->field3, (unsigned) t->field4);
		case LOCKTAG_ADVISORY:
			/* pg_advisory_lock(bigint) sets objsubid 1, (int, int) 2 */
			if (t->field4 == 1)
				return psprintf("advisory %lld", (long long)
								(((uint64) t->field2 << 32) | t->field3));
			return psprintf("advisory %d, %d",
							(int32) t->field2, (int32) t->field3);
		case LOCKTAG_RELATION:
		case LOCKTAG_RELATION_EXTEND:
		case LOCKTAG_DATABASE_FROZEN_IDS:
		case -1:
			return NULL;
		default:
			return psprintf("%u/%u/%u/%u", t->field1, t->field2, t->field3,
							(unsigned) t->field4);
	}
}

/* The name of a mode of the lock's method ("AccessShareLock"), or NULL. */
const char *
pgs_lock_mode_name(const PgsLockTarget *t, int mode)
{
	if (lock_type(t) < 0 || mode <= 0 || mode > MaxLockMode ||
		(t->method != DEFAULT_LOCKMETHOD && t->method != USER_LOCKMETHOD))
		return NULL;
	return GetLockmodeName(t->method, mode);
}

/*
 * What the first blocker holds on the lock, its modes joined by ", ", and
 * when it also waits for the lock ahead in the queue (holding none, or
 * upgrading what it holds): "queued for" the mode it awaits, after a "; ".
 * NULL if unknown.  Palloc'd.
 */
char *
pgs_lock_blocker_modes_text(const PgsLockTarget *t)
{
	StringInfoData buf;

	if (lock_type(t) < 0)
		return NULL;
	initStringInfo(&buf);
	for (int mode = 1; mode <= MaxLockMode; mode++)
	{
		const char *name;

		if ((t->blocker_hold_mask & LOCKBIT_ON(mode)) == 0 ||
			(name = pgs_lock_mode_name(t, mode)) == NULL)
			continue;
		appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "", name);
	}
	if (pgs_lock_mode_name(t, t->blocker_wait_mode) != NULL)
		appendStringInfo(&buf, "%squeued for %s", buf.len > 0 ? "; " : "",
						 pgs_lock_mode_name(t, t->blocker_wait_mode));
	if (buf.len == 0)
	{
		pfree(buf.data);
		return NULL;
	}
	return buf.data;
}
