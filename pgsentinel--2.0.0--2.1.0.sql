/* pgsentinel--2.0.0--2.1.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgsentinel UPDATE TO '2.1.0'" to load this file. \quit

-- 2.1.0 is under construction: this script gains the release's objects as
-- they are built (it is not released yet, so it may still change).
