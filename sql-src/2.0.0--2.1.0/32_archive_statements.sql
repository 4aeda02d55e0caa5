
-- The statements history in the archive (docs/archive.md): per reading of
-- the statements ring, the deltas since the statement's previous reading,
-- as pg_stat_statements_history_deltas() computes them (reset-aware), and
-- the statement's normalized text, copied from pg_stat_statements once per
-- day.  The archiver (src/archive_statements.c) writes both and moves the
-- statements' own watermark in one statement, exactly once.
--
-- Readings in which no counter moved (a statement still running: its
-- counters only move when an execution ends) are not stored: they add
-- nothing to any sum.  Stored deltas that are zero are NULL (each NULL
-- costs a bit instead of eight bytes); a reset interval has reset = true
-- and every delta NULL.  The views show the deltas as the helper does.

-- The statements' watermark: the last reading archived, within the ring's
-- history (pgsentinel_history_id()), as for the samples.
ALTER TABLE pgsentinel_archive_state
    ADD COLUMN stmt_history_id bigint,
    ADD COLUMN stmt_last_sample_id bigint,
    ADD COLUMN stmt_last_time timestamptz,
    ADD COLUMN stmt_readings_archived bigint NOT NULL DEFAULT 0,
    ADD COLUMN stmt_rows_archived bigint NOT NULL DEFAULT 0,
    ADD COLUMN stmt_rows_unchanged bigint NOT NULL DEFAULT 0;

-- One row per statement (userid, dbid, queryid, toplevel, as
-- pg_stat_statements keys it) per reading whose counters moved.
-- prev_ash_time: the statement's previous reading; 8-byte columns first,
-- so that no byte is lost to alignment.
CREATE TABLE pgsentinel_archive_stmt_delta (
    ash_time timestamptz NOT NULL,
    prev_ash_time timestamptz NOT NULL,
    sample_id bigint NOT NULL,
    queryid bigint NOT NULL,
    calls bigint,
    rows bigint,
    exec_ms double precision,
    plans bigint,
    plan_ms double precision,
    shared_blks_hit bigint,
    shared_blks_read bigint,
    shared_blks_dirtied bigint,
    shared_blks_written bigint,
    temp_blks_read bigint,
    temp_blks_written bigint,
    wal_bytes bigint,
    userid oid NOT NULL,
    dbid oid NOT NULL,
    toplevel boolean NOT NULL,
    reset boolean NOT NULL
) PARTITION BY RANGE (ash_time);
CREATE INDEX ON pgsentinel_archive_stmt_delta USING brin (ash_time);

-- The text of each statement archived on a day, in pgsentinel_archive_text
-- (the samples' texts: same day partitions, same retention, deduplicated
-- by hash, so that a text both have is stored once).  Looked up by
-- (day, statement); dropped with the day's deltas.
CREATE TABLE pgsentinel_archive_stmt_text (
    day date NOT NULL,
    queryid bigint NOT NULL,
    dbid oid NOT NULL,
    userid oid NOT NULL,
    text_id integer,            -- NULL: no text was found that day
    PRIMARY KEY (day, queryid, dbid, userid)
) PARTITION BY RANGE (day);

REVOKE ALL ON pgsentinel_archive_stmt_delta, pgsentinel_archive_stmt_text
    FROM PUBLIC;
