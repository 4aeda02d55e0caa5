/*-------------------------------------------------------------------------
 *
 * persist.h
 *		The history kept across restarts: the rings and their texts,
 *		written by the postmaster at a clean shutdown and read back when it
 *		creates shared memory (persist.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_PERSIST_H
#define PGS_PERSIST_H

/* persist.c */
extern void pgs_history_load(void);
extern void pgs_history_save(int code, Datum arg);

#endif							/* PGS_PERSIST_H */
