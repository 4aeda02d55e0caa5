
-- The installation (and every update) is refused where functions another
-- role created are named like ours and take defaults: such a function
-- makes our calls of that name ambiguous, so that the archiver and the
-- reports would fail, and name resolution in a schema others may create
-- in cannot rule that out (docs/security.md).  pgsentinel_status() names
-- those created later.  Everything here is pg_catalog's, qualified, with
-- exact types: a DO block resolves names when it runs.
DO $pgs$
DECLARE
    found text;
    n integer;
    s name;
BEGIN
    SELECT pg_catalog.count(*)::pg_catalog.int4,
           pg_catalog.array_to_string((pg_catalog.array_agg(x.sig ORDER BY x.sig))[1:3], ', '),
           (pg_catalog.array_agg(x.nspname))[1]
      INTO n, found, s
      FROM (SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text AS sig, ns.nspname
              FROM pg_catalog.pg_extension e
              JOIN pg_catalog.pg_proc p
                ON p.pronamespace OPERATOR(pg_catalog.=) e.extnamespace
              JOIN pg_catalog.pg_namespace ns
                ON ns.oid OPERATOR(pg_catalog.=) e.extnamespace
             WHERE e.extname OPERATOR(pg_catalog.=) 'pgsentinel'::pg_catalog.name
               AND p.pronargdefaults OPERATOR(pg_catalog.>) 0::pg_catalog.int2
               AND p.proname OPERATOR(pg_catalog.=) ANY (
                       SELECT m.proname
                         FROM pg_catalog.pg_depend d
                         JOIN pg_catalog.pg_proc m ON m.oid OPERATOR(pg_catalog.=) d.objid
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                          AND d.refobjid OPERATOR(pg_catalog.=) e.oid
                          AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
               AND NOT EXISTS (
                       SELECT FROM pg_catalog.pg_depend d
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                          AND d.objid OPERATOR(pg_catalog.=) p.oid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                          AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
           ) x;
    IF found IS NOT NULL THEN
        RAISE EXCEPTION '% function(s) named like pgsentinel''s, with defaults, are in schema %: %',
                        n, s, pg_catalog.concat(found, CASE WHEN n OPERATOR(pg_catalog.>) 3 THEN ', ...' END)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'They are not part of pgsentinel: another role created them, and they would make its calls of those names ambiguous.',
                  HINT = 'Drop them after checking what they are, or install pgsentinel in a schema only trusted roles can create in (docs/security.md).';
    END IF;
END
$pgs$;
