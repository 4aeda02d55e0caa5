/* pgsentinel--2.0.0--2.1.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgsentinel UPDATE TO '2.1.0'" to load this file. \quit

-- Assembled by the Makefile: sql-src/update/ (what only an update from
-- 2.0.0 does), then the files of 2.1.0's concerns (sql-src/ring, archive,
-- fleet, reports, checks) in the order of their numbers, the same files
-- that pgsentinel--2.1.0.sql is made of.  t/029_fresh_equals_update.pl
-- checks that both end with the same catalog.  2.1.0 is not released yet:
-- it may still change.
