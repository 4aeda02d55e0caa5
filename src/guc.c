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

#include "pgsentinel.h"

double		pgs_sampling_period = 1.0;
int			pgs_ash_max_entries = 36000;
int			pgs_text_area_kb = 4096;
char	   *pgs_db_name = NULL;
bool		pgs_track_idle_trans = false;
int			pgs_pgssh_max_entries = 10000;
bool		pgs_pgssh_enable = true;
bool		pgs_save_history = true;

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
							36000, 1000, 50000000,
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
							10000, 1000, 50000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pgsentinel_pgssh.enable",
							 "Record the pg_stat_statements counters of the sampled statements.",
							 NULL,
							 &pgs_pgssh_enable,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pgsentinel.save_history",
							 "Save the history at shutdown and restore it at the next start.",
							 "The file, pg_stat/pgsentinel_history.stat, holds the history's query texts.",
							 &pgs_save_history,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("pgsentinel");
	MarkGUCPrefixReserved("pgsentinel_ash");
	MarkGUCPrefixReserved("pgsentinel_pgssh");
}
