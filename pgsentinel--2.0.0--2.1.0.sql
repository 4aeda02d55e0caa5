/* pgsentinel--2.0.0--2.1.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgsentinel UPDATE TO '2.1.0'" to load this file. \quit

-- 2.1.0 is under construction: this script gains the release's objects as
-- they are built (it is not released yet, so it may still change).

-- Empty both histories and their texts as readers see them (sample ids go
-- on); returns the time of the reset.  Superusers only unless granted, as
-- pg_stat_statements_reset().
CREATE FUNCTION pgsentinel_reset()
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'pgsentinel_reset'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION pgsentinel_reset() FROM PUBLIC;
