
-- The archive (docs/archive.md): the history in ordinary tables, written by
-- the archiver worker (src/archive/archiver.c, src/archive/archive_step.c) every
-- pgsentinel_archive.interval, exactly once, 1 sample in
-- pgsentinel_archive.keep_one_in, with weights.  Raw rows are partitioned
-- by day and dropped whole after pgsentinel_archive.retention; per-minute
-- and per-hour rollups are kept far longer.  The archiver creates and drops
-- the partitions; the parents are members of the extension, so DROP
-- EXTENSION removes the archive with them.
--
-- None of these tables is granted to anybody: the views below read them
-- with their owner's rights and show of each row what pg_stat_activity
-- shows of a session (docs/visibility.md).

-- The watermarks: the last sample archived, committed with its rows.
-- history_id names the ring's history (a crash or a promotion starts a new
-- one: the archive then goes on after last_sample_time).  rolled_until:
-- the minute rollups hold the minutes before it; hours_rolled_until: the
-- hour rollups hold the hours before it (31_archive_step.sql).  The statements
-- history has a watermark of its own, within the same history
-- (statements_*: 32_archive_statements.sql).
CREATE TABLE pgsentinel_archive_state (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    history_id bigint,
    last_sample_id bigint,
    last_sample_time timestamptz,
    samples_archived bigint NOT NULL DEFAULT 0,
    samples_skipped bigint NOT NULL DEFAULT 0,
    rows_archived bigint NOT NULL DEFAULT 0,
    samples_lost bigint NOT NULL DEFAULT 0,
    rows_lost bigint NOT NULL DEFAULT 0,
    last_archive_time timestamptz,
    rolled_until timestamptz,
    hours_rolled_until timestamptz,
    statements_history_id bigint,
    statements_last_sample_id bigint,
    statements_last_time timestamptz,
    statements_readings_archived bigint NOT NULL DEFAULT 0,
    statements_rows_archived bigint NOT NULL DEFAULT 0,
    statements_rows_unchanged bigint NOT NULL DEFAULT 0
);
INSERT INTO pgsentinel_archive_state DEFAULT VALUES;

-- Wait events by name (codes differ between major versions).
CREATE TABLE pgsentinel_archive_wait_event (
    wait_event_id integer PRIMARY KEY,
    wait_event_type text,
    wait_event text,
    UNIQUE NULLS NOT DISTINCT (wait_event_type, wait_event)
);

-- The samples and their rows, one batch per archiving step and UTC day
-- (docs/archive.md): what is constant for a session is stored once a day
-- (pgsentinel_archive_session), a statement's text once a day as a
-- template (pgsentinel_archive_text); what changes from sample to sample
-- is stored here.  Element i of each sample array is the batch's i-th
-- sample (in time order); weight: the seconds of one session's time each
-- row of a sample stands for (period x keep_one_in); active_sessions: the
-- sample's rows of active sessions archived.  The rows are row_data, a
-- versioned payload that only the extension's C reads and writes
-- (src/archive/batch_format.c has the format): pgsentinel_batch_pack()
-- makes it of the row columns below, pgsentinel_batch_rows() reads the
-- rows back, and the fleet moves it between servers as it is.  The row
-- columns, element j of each the batch's j-th row, the rows ordered by
-- sample and then session: the rows of a sample hold xids and start times
-- close to each other (under pgbench read-write a minute's payload takes
-- 12 % less than in the order of session then sample, where a session's
-- next transaction is a second of xids and microseconds further), and
-- what a session keeps from one sample to the next repeats a sample's
-- rows later, which zstd finds (bench/REPORT.md 6l): row_samples (the index of
-- the row's sample), session_ids, wait_event_ids, states, xact_us,
-- query_us, change_us, backend_xids, backend_xmins, top_level_query_ids,
-- top_level_query_values, query_ids, query_values, cmdtypes, queryids,
-- nested_queryids, blockers, blockerpids, blocker_states,
-- blocker_usesysids, blocking_pids, lock_types, lock_relations,
-- lock_targets, lock_modes, blocker_lock_modes, nested_is_queryid.
-- Times are microseconds: sample_us
-- after first_time; xact_us after first_time, query_us after xact_start
-- (or first_time), change_us after query_start (or xact_start, or
-- first_time).  A row's statement text the same as its top-level one
-- (template and values) is not stored twice: query_ids holds 0 (no text's
-- id) and query_values NULL; a nested query id the same as the query id
-- (or both NULL) is not either: nested_is_queryid holds 1 and
-- nested_queryids NULL (a payload without that column holds every
-- nested query id in nested_queryids).  The blocker columns are absent
-- when no row
-- of the batch waited for another session.  A batch never spans two UTC
-- days: the partitions are by day on first_time.  The integer row columns
-- are packed by pgsentinel_pack(): each element as its difference from
-- the one before, or as itself where that compresses better, in as few
-- bytes as it needs (src/archive/packed_ints.c
-- has the format); pgsentinel_unpack() reads one back as bigint[].
-- Packs a bigint array (as below, an integer and an xid array).
CREATE FUNCTION pgsentinel_pack(bigint[]) RETURNS bytea
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_pack';
-- Packs an integer array.
CREATE FUNCTION pgsentinel_pack(integer[]) RETURNS bytea
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_pack';
-- Packs an xid array.
CREATE FUNCTION pgsentinel_pack(xid[]) RETURNS bytea
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_pack';
-- Reads a packed array back (src/archive/packed_ints.c).
CREATE FUNCTION pgsentinel_unpack(bytea) RETURNS bigint[]
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_unpack';

-- A batch's rows payload made of its row columns (above; NULL: a column of
-- NULLs), the payload of the rows of the kept samples only (sample_map[i]:
-- the new index of sample i, NULL to leave its rows out), and the format
-- of a payload, or an error if this version cannot read it as the rows of
-- a batch of the table named by of ('rows', 'statements'; NULL: either)
-- (src/archive/batch_format.c).
-- Makes a rows payload of the row columns (src/archive/batch_format.c).
CREATE FUNCTION pgsentinel_batch_pack(
    --@columns row_data decl
)
RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_batch_pack';

-- Reads a rows payload; returns a payload of the rows of the samples sample_map keeps.
CREATE FUNCTION pgsentinel_batch_keep(row_data bytea, sample_map integer[])
RETURNS bytea
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_batch_keep';

-- Reads a payload's header: its format, or an error this version cannot read.
CREATE FUNCTION pgsentinel_batch_format(row_data bytea, of text DEFAULT NULL)
RETURNS integer
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_batch_format';

-- The microseconds from a to b (NULL if either is): the batches below
-- store times as such differences, pgsentinel_us_after() reads them back
-- (src/archive/batch_times.c: exact, overflow checked).
-- Reads two times; returns the microseconds between them.
CREATE FUNCTION pgsentinel_us_between(a timestamptz, b timestamptz)
RETURNS bigint
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_us_between';

-- Reads a time and microseconds after it; returns the time they name.
CREATE FUNCTION pgsentinel_us_after(a timestamptz, us bigint)
RETURNS timestamptz
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_us_after';

-- A batch's samples as one payload (src/columns.txt's [sample_data]:
-- element i of each column the batch's i-th sample), and the columns read
-- back as arrays (src/archive/batch_samples.c).  As arrays in the table,
-- compressed by TOAST's pglz, a minute's samples took 785 B under pgbench
-- read-write; as a payload 270 (bench/REPORT.md 6n).
-- Makes the payload of a batch's samples.
CREATE FUNCTION pgsentinel_sample_pack(
    --@columns sample_data decl
)
RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_sample_pack';

-- Reads a batch's samples payload; returns its columns as arrays.
CREATE FUNCTION pgsentinel_batch_samples(sample_data bytea,
    --@columns sample_data out
)
RETURNS record
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_batch_samples';

CREATE TABLE pgsentinel_archive_batch (
    first_time timestamptz NOT NULL,
    last_time timestamptz NOT NULL,
    sample_data bytea NOT NULL,
    row_data bytea NOT NULL
) PARTITION BY RANGE (first_time);
-- (compressed by pgsentinel_sample_pack() and pgsentinel_batch_pack()
-- already: TOAST would only try again)
ALTER TABLE pgsentinel_archive_batch ALTER COLUMN sample_data SET STORAGE EXTERNAL;
ALTER TABLE pgsentinel_archive_batch ALTER COLUMN row_data SET STORAGE EXTERNAL;
CREATE INDEX ON pgsentinel_archive_batch USING brin (first_time);

-- Who a session is (its database, role, client, start): one row per
-- session per day, found again by hash.
CREATE TABLE pgsentinel_archive_session (
    day date NOT NULL,
    session_id integer NOT NULL,
    hash bigint NOT NULL,
    datid oid,
    datname text,
    pid integer,
    leader_pid integer,
    usesysid oid,
    usename text,
    application_name text,
    client_addr text,
    client_hostname text,
    client_port integer,
    backend_start timestamptz,
    backend_type text,
    PRIMARY KEY (day, session_id)
) PARTITION BY RANGE (day);
CREATE INDEX ON pgsentinel_archive_session (day, hash);

-- Statement texts and templates, once per day.
CREATE TABLE pgsentinel_archive_text (
    day date NOT NULL,
    text_id integer NOT NULL,
    hash bigint NOT NULL,
    text text NOT NULL,
    PRIMARY KEY (day, text_id)
) PARTITION BY RANGE (day);
CREATE INDEX ON pgsentinel_archive_text (day, hash);

-- Rollups: the time sessions spent (db_time, seconds: the sum of the
-- weights of the rows) by minute and by hour, per wait, statement,
-- database, role, application and backend type; and the time observed
-- (the sum of the samples' weights) per bucket, with the most rows one
-- sample of the bucket archived (peak).  Average active sessions of a
-- bucket = db_time / observed.  usesysid is kept for the views
-- (36_rollup_views.sql), which hide of other roles' time what
-- pg_stat_activity hides.  An hour's rows are added to once a minute, by
-- key; a minute's are written once, by the step that closes the minute
-- (31_archive_step.sql), as one batch: below.
CREATE TABLE pgsentinel_rollup_hour (
    bucket timestamptz NOT NULL,
    datname text,
    usesysid oid,
    usename text,
    application_name text,
    backend_type text,
    wait_event_type text,
    wait_event text,
    queryid bigint,
    db_time double precision NOT NULL,
    rows bigint NOT NULL,
    UNIQUE NULLS NOT DISTINCT (bucket, datname, usesysid, usename,
                               application_name, backend_type,
                               wait_event_type, wait_event, queryid)
) PARTITION BY RANGE (bucket);

CREATE TABLE pgsentinel_rollup_minute_observed (
    bucket timestamptz NOT NULL PRIMARY KEY,
    samples bigint NOT NULL,
    observed double precision NOT NULL,
    peak integer
) PARTITION BY RANGE (bucket);

CREATE TABLE pgsentinel_rollup_hour_observed (
    bucket timestamptz NOT NULL PRIMARY KEY,
    samples bigint NOT NULL,
    observed double precision NOT NULL,
    peak integer
) PARTITION BY RANGE (bucket);

-- The time of each session by hour and by minute (and wait): the rollups
-- above do not keep the pid nor the client.  last_time: the time of the
-- bucket's last row of the group, so that a session's latest names can be
-- found.
CREATE TABLE pgsentinel_rollup_session_hour (
    bucket timestamptz NOT NULL,
    pid integer,
    datname text,
    usesysid oid,
    usename text,
    application_name text,
    client_addr text,
    backend_type text,
    wait_event_type text,
    wait_event text,
    db_time double precision NOT NULL,
    rows bigint NOT NULL,
    last_time timestamptz NOT NULL,
    UNIQUE NULLS NOT DISTINCT (bucket, pid, datname, usesysid, usename,
                               application_name, client_addr, backend_type,
                               wait_event_type, wait_event)
) PARTITION BY RANGE (bucket);

-- The blocking trees of the archived samples by hour and by minute, in the
-- parts that add up over any number of buckets (pgsentinel_blocking_parts(), in
-- 36_rollup_views.sql, says what each kind holds): 'b' a session behind a
-- root, 'r' a root, 'o' a session's own last row, 's' the last state a
-- waiter saw of its blocker.  The latest names and texts are those of
-- last_time; first_time is the first sample of the part.  lock, lock_mode,
-- blocker_lock_modes: of a 'b' part, the lock it waited for at last_time
-- (pgsentinel_lock_name()), the mode it wanted, what its blocker held.
CREATE TABLE pgsentinel_rollup_blocking_hour (
    bucket timestamptz NOT NULL,
    kind "char" NOT NULL,
    root_pid integer,
    pid integer,
    key_usesysid oid,
    depth integer,
    blocked_by integer[],
    samples bigint NOT NULL,
    db_time double precision NOT NULL,
    last_time timestamptz NOT NULL,
    usesysid oid,
    usename text,
    state text,
    wait_event_type text,
    wait_event text,
    query text,
    first_time timestamptz,
    application_name text,
    client_addr text,
    xact_start timestamptz,
    lock text,
    lock_mode text,
    blocker_lock_modes text,
    UNIQUE NULLS NOT DISTINCT (bucket, kind, root_pid, pid, key_usesysid)
) PARTITION BY RANGE (bucket);

-- The minute rollups, a minute's rows as one row (a batch, as the samples
-- are kept): the bucket and row_data, one payload of the minute's rows
-- (src/columns.txt's [minute_data], [session_minute_data],
-- [blocking_minute_data]; src/archive/batch_format.c): element i of each of
-- its columns the minute's i-th row, the rows in the order of their names,
-- compressed by zstd as a whole (the column without TOAST's compression).
-- The rows of a minute repeat their names, waits and texts from one to the
-- next.  As arrays of columns, compressed by TOAST only above its
-- threshold, the three took 225 B a sample of WAL under pgbench read-write
-- (bench/REPORT.md 6i), the blocking parts' texts most of it.  A minute has
-- more than one batch where rows came late (the step rolls them up as
-- extra rows of their minute): the readers sum a group's rows, through the
-- views below, which show the rows the batches hold.  No key, a BRIN index
-- on the bucket.
CREATE TABLE pgsentinel_rollup_minute_batch (
    bucket timestamptz NOT NULL,
    row_data bytea NOT NULL
) PARTITION BY RANGE (bucket);
ALTER TABLE pgsentinel_rollup_minute_batch ALTER COLUMN row_data SET STORAGE EXTERNAL;
CREATE INDEX ON pgsentinel_rollup_minute_batch USING brin (bucket)
    WITH (pages_per_range = 16);

CREATE TABLE pgsentinel_rollup_session_minute_batch (
    bucket timestamptz NOT NULL,
    row_data bytea NOT NULL
) PARTITION BY RANGE (bucket);
ALTER TABLE pgsentinel_rollup_session_minute_batch ALTER COLUMN row_data SET STORAGE EXTERNAL;
CREATE INDEX ON pgsentinel_rollup_session_minute_batch USING brin (bucket)
    WITH (pages_per_range = 16);

CREATE TABLE pgsentinel_rollup_blocking_minute_batch (
    bucket timestamptz NOT NULL,
    row_data bytea NOT NULL
) PARTITION BY RANGE (bucket);
ALTER TABLE pgsentinel_rollup_blocking_minute_batch ALTER COLUMN row_data SET STORAGE EXTERNAL;
CREATE INDEX ON pgsentinel_rollup_blocking_minute_batch USING brin (bucket)
    WITH (pages_per_range = 16);

-- A minute rollup's payload made of its columns (arrays, element i of each
-- the minute's i-th row; NULL: a column of NULLs), and its rows read back,
-- in the columns of the hour's (src/archive/batch_format.c, rollup_rows.c).
-- Makes the payload of a minute's rollup rows (pgsentinel_rollup_minute_batch).
CREATE FUNCTION pgsentinel_minute_pack(
    --@columns minute_data decl
)
RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_minute_pack';

-- Reads that payload back as rows (src/archive/rollup_rows.c, as the two below).
CREATE FUNCTION pgsentinel_rollup_minute_rows(row_data bytea,
    --@columns minute_data elemout
)
RETURNS SETOF record
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 50
AS 'MODULE_PATHNAME', 'pgsentinel_rollup_minute_rows';

-- Makes the payload of a minute's sessions (pgsentinel_rollup_session_minute_batch).
CREATE FUNCTION pgsentinel_session_minute_pack(
    --@columns session_minute_data decl
)
RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_session_minute_pack';

-- Reads that payload back as rows.
CREATE FUNCTION pgsentinel_rollup_session_minute_rows(row_data bytea,
    --@columns session_minute_data elemout
)
RETURNS SETOF record
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 50
AS 'MODULE_PATHNAME', 'pgsentinel_rollup_session_minute_rows';

-- Makes the payload of a minute's blocking parts (pgsentinel_rollup_blocking_minute_batch).
CREATE FUNCTION pgsentinel_blocking_minute_pack(
    --@columns blocking_minute_data decl
)
RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pgsentinel_blocking_minute_pack';

-- Reads that payload back as rows.
CREATE FUNCTION pgsentinel_rollup_blocking_minute_rows(row_data bytea,
    --@columns blocking_minute_data elemout
)
RETURNS SETOF record
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 20
AS 'MODULE_PATHNAME', 'pgsentinel_rollup_blocking_minute_rows';

-- The minute rollups' rows, in the columns of the hour tables; each reads its batches.
CREATE VIEW pgsentinel_rollup_minute AS
SELECT b.bucket, u.*
  FROM pgsentinel_rollup_minute_batch b, pgsentinel_rollup_minute_rows(b.row_data) u;

-- Reads pgsentinel_rollup_session_minute_batch.
CREATE VIEW pgsentinel_rollup_session_minute AS
SELECT b.bucket, u.*
  FROM pgsentinel_rollup_session_minute_batch b,
       pgsentinel_rollup_session_minute_rows(b.row_data) u;

-- Reads pgsentinel_rollup_blocking_minute_batch.
CREATE VIEW pgsentinel_rollup_blocking_minute AS
SELECT b.bucket, u.*
  FROM pgsentinel_rollup_blocking_minute_batch b,
       pgsentinel_rollup_blocking_minute_rows(b.row_data) u;

REVOKE ALL ON pgsentinel_archive_state, pgsentinel_archive_wait_event,
    pgsentinel_archive_batch, pgsentinel_archive_session,
    pgsentinel_archive_text, pgsentinel_rollup_minute_batch,
    pgsentinel_rollup_minute_observed, pgsentinel_rollup_hour,
    pgsentinel_rollup_hour_observed, pgsentinel_rollup_session_hour,
    pgsentinel_rollup_blocking_hour, pgsentinel_rollup_session_minute_batch,
    pgsentinel_rollup_blocking_minute_batch, pgsentinel_rollup_minute,
    pgsentinel_rollup_session_minute, pgsentinel_rollup_blocking_minute
    FROM PUBLIC;

-- pg_dump keeps the archive: the wait events as a configuration table,
-- the partitions (not members of the extension) as ordinary tables of the
-- schema (docs/archive.md).  The watermark is not dumped: it belongs to
-- the server's ring, which a restored database does not have.
SELECT pg_catalog.pg_extension_config_dump('pgsentinel_archive_wait_event', '');

-- pgsentinel_status() gains the archiver's columns, after 2.0's (the C
-- function fills a 2.0 declaration too, until the update).
DROP FUNCTION pgsentinel_status();
-- Reads the ring's, the statements worker's and the archiver's shared state (src/status.c).
CREATE FUNCTION pgsentinel_status(
    OUT worker_pid integer,
    OUT worker_started timestamptz,
    OUT samples_taken bigint,
    OUT last_sample_time timestamptz,
    OUT last_sample_us bigint,
    OUT max_sample_us bigint,
    OUT max_lock_wait_us bigint,
    OUT ash_rows bigint,
    OUT ash_capacity integer,
    OUT ash_rows_written bigint,
    OUT oldest_row_time timestamptz,
    OUT text_area_used bigint,
    OUT text_area_size bigint,
    OUT texts_stored bigint,
    OUT texts_dropped bigint,
    OUT rows_backfilled bigint,
    OUT sample_overruns bigint,
    OUT blockers_via_core bigint,
    OUT sampling_period double precision,
    OUT track_idle_trans boolean,
    OUT ash_row_bytes integer,
    OUT shmem_bytes bigint,
    OUT pgssh_state text,
    OUT pgssh_message text,
    OUT pgssh_worker_pid integer,
    OUT pgssh_rows bigint,
    OUT pgssh_capacity integer,
    OUT pgssh_samples bigint,
    OUT pgssh_last_us bigint,
    OUT pgssh_max_us bigint,
    OUT pgssh_requests_skipped bigint,
    OUT pgssh_keys_dropped bigint,
    OUT diagnosis text,
    OUT archive_state text,
    OUT archive_message text,
    OUT archive_worker_pid integer,
    OUT archive_last_time timestamptz,
    OUT archive_lag_seconds double precision,
    OUT archive_last_us bigint,
    OUT archive_samples bigint,
    OUT archive_samples_skipped bigint,
    OUT archive_rows bigint,
    OUT archive_samples_lost bigint,
    OUT archive_rows_lost bigint,
    OUT archive_bytes bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgsentinel_status_2_0'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

