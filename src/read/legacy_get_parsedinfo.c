/*-------------------------------------------------------------------------
 *
 * legacy_get_parsedinfo.c
 *		For 1.4 and 1.5 installations only: get_parsedinfo(pid), 1.4's
 *		per-backend view of what a session is executing, kept so that they
 *		keep working with this library until they are updated (the update
 *		to 2.0.0 drops the function).  Read from the backend's slot
 *		(hooks.c).  Of another session, the reader sees the query id, text
 *		and command type under pg_stat_activity's rule (may it see the
 *		session's role?); its own session it always sees.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "compat.h"
#include "pgsentinel.h"
#include "read/views.h"
#include "sample/backend_slot.h"

PG_FUNCTION_INFO_V1(get_parsedinfo);

/* SQL function get_parsedinfo(pid int): at most one row. */
Datum
get_parsedinfo(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			pid = PG_GETARG_INT32(0);
	PGPROC	   *proc;
	PgsBackendSlot *copy;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	bool		visible;

	pgs_check_loaded();
	InitMaterializedSRF(fcinfo, 0);

	proc = BackendPidGetProc(pid);
	if (proc == NULL)
		return (Datum) 0;
	copy = palloc(pgs_state->slots.size);
	if (!pgs_read_backend_slot(pgs_proc_number(proc), pid, copy))
		return (Datum) 0;

	visible = pid == MyProcPid ||
		has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) ||
		(OidIsValid(proc->roleId) && has_privs_of_role(GetUserId(), proc->roleId));

	values[0] = Int32GetDatum(pid);
	values[1] = Int64GetDatum((int64) (copy->nested ? copy->exec_queryid
									   : copy->top_queryid));
	nulls[1] = !visible;
	if (!visible)
		values[2] = CStringGetTextDatum("<insufficient privilege>");
	else if (copy->nested)
		values[2] = PointerGetDatum(cstring_to_text_with_len(copy->text,
															 copy->text_len));
	else
		nulls[2] = true;
	values[3] = CStringGetTextDatum(pgs_cmdtype_name(copy->nested ? copy->exec_cmdtype
													 : copy->top_cmdtype));
	nulls[3] = !visible;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
