/* pgsentinel--2.0.0--2.1.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgsentinel UPDATE TO '2.1.0'" to load this file. \quit

-- This script is assembled by the Makefile from the files of
-- sql-src/2.0.0--2.1.0/, one concern each, in the order of their names.
-- 2.1.0 is not released yet: it may still change.

