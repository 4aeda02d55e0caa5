/*-------------------------------------------------------------------------
 *
 * guc.c
 *		pgsentinel's settings.  Every pgsentinel 1.4 name is accepted with
 *		its 1.4 meaning; out-of-range and malformed values are refused by
 *		the GUC machinery with the allowed range in the message, and the
 *		running value is kept.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "guc.h"

double		pgs_sampling_period = 1.0;
int			pgs_ash_max_entries = 36000;
int			pgs_text_area_kb = 4096;
char	   *pgs_db_name = NULL;
bool		pgs_track_idle_trans = false;
int			pgs_pgssh_max_entries = 10000;
bool		pgs_pgssh_enable = true;
int			pgs_pgssh_sweep_interval_s = 30;
bool		pgs_save_history = true;
bool		pgs_archive_enable = true;
int			pgs_archive_interval_ms = 60 * 1000;
int			pgs_archive_keep_one_in = 10;
int			pgs_archive_retention_min = 8 * 24 * 60;
int			pgs_archive_minute_retention_min = 30 * 24 * 60;
int			pgs_archive_hour_retention_min = 1827 * 24 * 60;
int			pgs_archive_fleet_pull_timeout_ms = 60 * 1000;

/* Read by the SQL reports only. */
static int	pgs_report_cpus = 0;
static bool pgs_report_rollups = true;

/* Define all settings; called from _PG_init while preloading. */
void
pgs_define_settings(void)
{
	DefineCustomRealVariable("pgsentinel_ash.sampling_period",
							 "Seconds between two samples of the active sessions.",
							 "Fractions are accepted down to 0.01 (10 ms); 1 is one second, as in pgsentinel 1.4.",
							 &pgs_sampling_period,
							 1.0, 0.01, 3600.0,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_ash.max_entries",
							"Rows kept in the active session history ring.",
							"Each row takes a fixed number of bytes of shared memory; see pgsentinel_status().",
							&pgs_ash_max_entries,
							36000, 1000, PGS_RING_MAX_ENTRIES,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_ash.text_area_size",
							"Shared memory for the deduplicated query texts of the history.",
							"When full, the oldest texts are dropped: their rows show NULL texts.",
							&pgs_text_area_kb,
							4096, 64, 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomStringVariable("pgsentinel.db_name",
							   "Database in which pg_stat_statements is read for the statements history.",
							   NULL,
							   &pgs_db_name,
							   "postgres",
							   PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);

	DefineCustomBoolVariable("pgsentinel_ash.track_idle_trans",
							 "Also sample sessions that are idle in transaction.",
							 NULL,
							 &pgs_track_idle_trans,
							 false,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_pgssh.max_entries",
							"Rows kept in the pg_stat_statements history ring.",
							NULL,
							&pgs_pgssh_max_entries,
							10000, 1000, PGS_RING_MAX_ENTRIES,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pgsentinel_pgssh.enable",
							 "Record the pg_stat_statements counters of the sampled statements.",
							 NULL,
							 &pgs_pgssh_enable,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_pgssh.sweep_interval",
							"Time between two readings of every statement of pg_stat_statements.",
							"Each keeps the statements whose counters changed since the previous one, so that statements the samples never see have their calls in the history too. 0 reads only the sampled statements.",
							&pgs_pgssh_sweep_interval_s,
							30, 0, 3600,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pgsentinel.save_history",
							 "Save the history at shutdown and restore it at the next start.",
							 "The file, pg_stat/pgsentinel_history.stat, holds the history's query texts.",
							 &pgs_save_history,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pgsentinel_archive.enable",
							 "Archive the history into tables of the extension in pgsentinel.db_name.",
							 "The archiver starts by itself once the extension exists there (docs/archive.md).",
							 &pgs_archive_enable,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_archive.interval",
							"Time between two archivings of the history: each writes its samples as one batch.",
							"What a crash can lose: the samples taken since the last archiving. Longer batches are smaller per row.",
							&pgs_archive_interval_ms,
							60 * 1000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_archive.keep_one_in",
							"Archive one sample in this many; each archived row then weighs as many samples.",
							"Which samples are kept depends on their sample id only: sample_id % keep_one_in = 0.",
							&pgs_archive_keep_one_in,
							10, 1, 3600,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_archive.retention",
							"How long archived samples are kept (whole days: partitions are dropped by day).",
							NULL,
							&pgs_archive_retention_min,
							8 * 24 * 60, 24 * 60, 3660 * 24 * 60,
							PGC_SIGHUP, GUC_UNIT_MIN,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_archive.minute_retention",
							"How long the per-minute rollups are kept (whole days).",
							NULL,
							&pgs_archive_minute_retention_min,
							30 * 24 * 60, 24 * 60, 3660 * 24 * 60,
							PGC_SIGHUP, GUC_UNIT_MIN,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_archive.hour_retention",
							"How long the per-hour rollups are kept (whole months).",
							NULL,
							&pgs_archive_hour_retention_min,
							1827 * 24 * 60, 31 * 24 * 60, 36600 * 24 * 60,
							PGC_SIGHUP, GUC_UNIT_MIN,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pgsentinel_archive.fleet_pull_timeout",
							"The longest a repository's archiver waits for one fleet server's pull.",
							"A pull past it is cancelled and recorded as that server's last error; the other servers' pulls and the archive go on.",
							&pgs_archive_fleet_pull_timeout_ms,
							60 * 1000, 1000, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * The SQL reports' settings (docs/reports.md), read there with
	 * current_setting(): declared so that SHOW and pg_settings know them and
	 * a misspelt one is an error.
	 */
	DefineCustomIntVariable("pgsentinel_report.cpus",
							"The CPU count the reports' charts draw their CPU line at.",
							"0 finds it from the server's CPUs (for callers that may read its files).",
							&pgs_report_cpus,
							0, 0, 100000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pgsentinel_report.rollups",
							 "The reports read the archive's rollups for whole hours and minutes of a window.",
							 "off reads rows only (to check that both give the same answers).",
							 &pgs_report_rollups,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("pgsentinel");
	MarkGUCPrefixReserved("pgsentinel_archive");
	MarkGUCPrefixReserved("pgsentinel_ash");
	MarkGUCPrefixReserved("pgsentinel_pgssh");
	MarkGUCPrefixReserved("pgsentinel_report");
}
