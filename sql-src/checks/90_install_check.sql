
-- The routines that would make a call of pgsentinel's ambiguous: in its
-- schema, not its members, named like one of its functions, and either
-- taking defaults or taking the first arguments of one of its functions
-- that has defaults (the shape of a call that leaves them out).  Our calls
-- pass every argument with its exact type, so that no other routine is
-- ever a better match (docs/security.md); but two that both fit a call
-- make it fail as ambiguous, and the archiver and the reports with it.
-- The installation check below, the event trigger after it and
-- pgsentinel_fleet_add() refuse them; pgsentinel_status() names any
-- function named like ours.  A view, not a function: a relation's name
-- cannot be overloaded, so that no routine planted in the schema makes
-- this very check ambiguous.  For PUBLIC: the event trigger reads it as
-- whoever makes a routine, and it shows only what the catalogs show all.
CREATE VIEW pgsentinel_ambiguous_routines AS
  SELECT p.oid::pg_catalog.regprocedure AS routine
    FROM pg_catalog.pg_proc p
   WHERE p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid
     AND EXISTS (
         SELECT FROM pg_catalog.pg_depend d
           JOIN pg_catalog.pg_proc m ON m.oid OPERATOR(pg_catalog.=) d.objid
           JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
          WHERE e.extname OPERATOR(pg_catalog.=) 'pgsentinel'::pg_catalog.name
            AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
            AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
            AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
            AND m.proname OPERATOR(pg_catalog.=) p.proname
            AND (p.pronargdefaults OPERATOR(pg_catalog.>) 0::pg_catalog.int2
                 OR (p.pronargs OPERATOR(pg_catalog.<) m.pronargs
                     AND p.pronargs OPERATOR(pg_catalog.>=) (m.pronargs OPERATOR(pg_catalog.-) m.pronargdefaults)
                     -- (slices: arrays of other lower bounds are not equal)
                     AND (p.proargtypes::pg_catalog.oid[])[0:p.pronargs OPERATOR(pg_catalog.-) 1::pg_catalog.int2]
                         OPERATOR(pg_catalog.=)
                         (m.proargtypes::pg_catalog.oid[])[0:p.pronargs OPERATOR(pg_catalog.-) 1::pg_catalog.int2])))
     AND NOT EXISTS (
         SELECT FROM pg_catalog.pg_depend d
          WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
            AND d.objid OPERATOR(pg_catalog.=) p.oid
            AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
            AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
   ORDER BY p.proname, p.oid;
GRANT SELECT ON pgsentinel_ambiguous_routines TO PUBLIC;

-- The installation (and every update) is refused where such routines are:
-- name resolution in a schema others may create in cannot rule them out.
DO $pgs$
DECLARE
    found text;
    n integer;
BEGIN
    SELECT pg_catalog.count(*)::pg_catalog.int4,
           pg_catalog.array_to_string((pg_catalog.array_agg(r.routine::pg_catalog.text))[1:3], ', ')
      INTO n, found
      FROM @extschema@.pgsentinel_ambiguous_routines r;
    IF found IS NOT NULL THEN
        RAISE EXCEPTION '% routine(s) named like pgsentinel''s functions would make its calls ambiguous, in schema %: %',
                        n, '@extschema@', pg_catalog.concat(found, CASE WHEN n OPERATOR(pg_catalog.>) 3 THEN ', ...' END)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'They are not part of pgsentinel: another role created them, taking defaults or the leading arguments of a pgsentinel function that has defaults, and a call of pgsentinel''s could then mean either.',
                  HINT = 'Drop them after checking what they are, or install pgsentinel in a schema only trusted roles can create in (docs/security.md).';
    END IF;
END
$pgs$;
