/*-------------------------------------------------------------------------
 *
 * guc.h
 *		pgsentinel's settings (guc.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_GUC_H
#define PGS_GUC_H

/*
 * The most rows a ring may hold (pgsentinel_ash.max_entries,
 * pgsentinel_pgssh.max_entries): an archive batch is read from one ring at
 * once, so none has more rows (packed_ints.c, batch_rows.c refuse more).
 */
#define PGS_RING_MAX_ENTRIES	50000000

/* guc.c */
extern double pgs_sampling_period;
extern int	pgs_ash_max_entries;
extern int	pgs_text_area_kb;
extern char *pgs_db_name;
extern bool pgs_track_idle_trans;
extern int	pgs_pgssh_max_entries;
extern bool pgs_pgssh_enable;
extern int	pgs_pgssh_sweep_interval_s;
extern bool pgs_save_history;
extern bool pgs_archive_enable;
extern int	pgs_archive_interval_ms;
extern int	pgs_archive_keep_one_in;
extern int	pgs_archive_retention_min;
extern int	pgs_archive_minute_retention_min;
extern int	pgs_archive_hour_retention_min;
extern int	pgs_archive_fleet_pull_timeout_ms;
extern void pgs_define_settings(void);

#endif							/* PGS_GUC_H */
