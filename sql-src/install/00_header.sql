/* pgsentinel--2.1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pgsentinel" to load this file. \quit

-- Assembled by the Makefile: sql-src/install/ (the objects of 1.4 to 2.0
-- as 2.1.0 has them), then the files of 2.1.0's concerns (sql-src/ring,
-- archive, fleet, reports, checks) in the order of their numbers, the same
-- files that the update from 2.0.0 is made of.  t/029_fresh_equals_update.pl
-- checks that a fresh installation and an updated one (from 1.4.0, 1.5.1
-- or 2.0.0) end with the same catalog.
