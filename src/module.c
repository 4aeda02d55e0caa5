/*-------------------------------------------------------------------------
 *
 * module.c
 *		Module entry point (_PG_init): settings, the shared-memory request, the
 *		per-statement hooks and the sampler worker, all set up while the
 *		library is preloaded.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"

#include "compat.h"
#include "guc.h"
#include "pgsentinel.h"
#include "sample/backend_slot.h"
#include "sample/sampler.h"
#include "store/persist.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* shmem_request_hook: our one allocation and lock. */
static void
pgs_shmem_request_hook(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	pgs_shmem_request();
}

/*
 * shmem_startup_hook: attach to it.  When the postmaster (or a standalone
 * backend) creates it, before any other process exists: bring back the
 * history saved at the last clean shutdown, and save it at this one
 * (persist.c).
 */
static void
pgs_shmem_startup_hook(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	if (pgs_shmem_startup() && !IsUnderPostmaster)
	{
		pgs_history_load();
		on_shmem_exit(pgs_history_save, (Datum) 0);
	}
}

/*
 * Module load.  Does nothing unless preloaded: the SQL functions then
 * raise an error that names shared_preload_libraries.
 */
void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	pgs_define_settings();

	/* query ids even without pg_stat_statements (compute_query_id = auto) */
	EnableQueryId();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = pgs_shmem_request_hook;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = pgs_shmem_startup_hook;

	pgs_install_hooks();

	/* pg_upgrade's binary-upgrade mode must not run the sampler */
	if (!IsBinaryUpgrade)
		pgs_register_worker();
}
