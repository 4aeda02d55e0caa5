/*-------------------------------------------------------------------------
 *
 * guc.h
 *		pgsentinel's settings (guc.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_GUC_H
#define PGS_GUC_H

/* guc.c */
extern double pgs_sampling_period;
extern int	pgs_ash_max_entries;
extern int	pgs_text_area_kb;
extern char *pgs_db_name;
extern bool pgs_track_idle_trans;
extern int	pgs_pgssh_max_entries;
extern bool pgs_pgssh_enable;
extern bool pgs_save_history;
extern bool pgs_archive_enable;
extern int	pgs_archive_interval_ms;
extern int	pgs_archive_keep_one_in;
extern int	pgs_archive_retention_min;
extern int	pgs_archive_minute_retention_min;
extern int	pgs_archive_hour_retention_min;
extern void pgs_define_settings(void);

#endif							/* PGS_GUC_H */
