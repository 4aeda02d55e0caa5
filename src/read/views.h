/*-------------------------------------------------------------------------
 *
 * views.h
 *		What the views share: the reader of the ASH ring as SQL values
 *		(ash_view.c), which the foreign table (ash_fdw.c) streams, and the
 *		result columns matched by name (columns.c), with which one C
 *		function serves every SQL declaration pgsentinel has shipped.
 *
 * Readers take no lock (the rules at the top of shmem.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_VIEWS_H
#define PGS_VIEWS_H

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

#include "columns_gen.h"
#include "store/ash_rows.h"

/* columns.c */
#define PGS_MAX_COLUMNS 64
extern void pgs_map_columns(TupleDesc desc, const char *const *known,
							const Oid *known_types, int nknown, int *map);
extern void pgs_put_mapped(Tuplestorestate *store, TupleDesc desc,
						   const int *map, const Datum *values,
						   const bool *nulls);

/* ash_view.c: reading the history as SQL values (columns: columns_gen.h) */
extern const char *const pgs_ash_columns[PGS_ASH_COLS];
extern const Oid pgs_ash_column_types[PGS_ASH_COLS];
typedef struct AshReader AshReader;
extern AshReader *pgs_ash_reader_begin(MemoryContext query_cxt,
										MemoryContext parent_cxt);
extern void pgs_ash_reader_end(AshReader *rd);
extern bool pgs_ash_reader_next(AshReader *rd, Datum *values, bool *nulls,
								const bool *want);
extern bool pgs_ash_reader_skip(AshReader *rd);
extern void pgs_ash_reader_rewind(AshReader *rd);
extern void pgs_ash_reader_set_sample_range(AshReader *rd, int64 min,
											int64 max);
extern const char *pgs_state_name(uint8 state);

/* lock_target.c: the lock a row waits for, in pg_locks' words */
extern const char *pgs_lock_type_name(const PgsLockTarget *t);
extern bool pgs_lock_relation(const PgsLockTarget *t, Oid *relid);
extern char *pgs_lock_target_text(const PgsLockTarget *t);
extern const char *pgs_lock_mode_name(const PgsLockTarget *t, int mode);
extern char *pgs_lock_blocker_modes_text(const PgsLockTarget *t);
extern const char *pgs_cmdtype_name(uint8 cmdtype);

#endif							/* PGS_VIEWS_H */
