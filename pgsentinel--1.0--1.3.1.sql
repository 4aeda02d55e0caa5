/* pgsentinel--1.0--1.3.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgsentinel UPDATE TO '1.3.1'" to load this file. \quit

-- pgsentinel 1.3.1 changed no SQL object: this script only lets a database
-- still at 1.0 follow the update chain 1.0 -> 1.3.1 -> 1.4.0 -> ... -> 2.0.0.
