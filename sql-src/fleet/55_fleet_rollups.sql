
-- The fleet's rollups (docs/fleet.md): each server's rows rolled up by
-- minute and by hour in the repository, by the SQL that rolls up the
-- archive (the fragment rollups, 31_archive_step.sql), so that a report of a fleet server
-- reads its whole hours and minutes from them as a report of this server
-- reads its own (pgsentinel_window_pieces()).
--
-- When: a server's minute is rolled up once every row of it is in the
-- repository.  A pulled server's rows are whole up to its watermark
-- (pulled_until: a pull stores samples in time order, as batches with
-- their sessions and texts).  A subscribed server's arrive a
-- source step at a time, in the order of the source's commits, each with
-- what its samples point to -- except during a subscription's initial
-- copy, whose tables are copied apart: its rows are whole once every
-- table of the subscription is ready ('r': a table merely synced, 's',
-- may be ahead of the others), up to its newest sample.  So the
-- rollups of a server reach the minute of its newest whole sample, and
-- the reports read the rest from its rows.
--
-- Exactly once: the server's row (rolled_until, hours_rolled_until) is
-- locked and moved in the transaction that inserts the rollups (on
-- another node, whose part commits first, the roll replaces what a lost
-- one left in its range); a roll
-- reads the rows of [rolled_until, hi) only, whatever feed brought them,
-- and a batch is stored once per server (a re-copy adds none), so no
-- row is rolled up twice.  A row that arrives for a time already rolled
-- up (a source whose clock went back) is in the rows, not the rollups.

-- One roll of one server: $1 its id, [$2, $3) the minutes to roll up,
-- [$4, $5) the hours it closes (their minutes before $2 read back, their
-- rows from $2 on).  %1$I is the extension's schema.  Returns the samples
-- and rows rolled up.
CREATE FUNCTION pgsentinel_fleet_roll_sql()
RETURNS text
LANGUAGE sql IMMUTABLE
RETURN $sql$
WITH roll_range AS MATERIALIZED (
  SELECT $2::timestamptz AS lo, $3::timestamptz AS hi,
         $4::timestamptz AS hlo, $5::timestamptz AS hhi),
 roll_rows AS MATERIALIZED (
  SELECT a.ash_time, a.sample_id, a.pid, a.datname, a.usesysid, a.usename,
         a.application_name, a.client_addr::text AS client_addr, a.backend_type,
         a.wait_event_type, a.wait_event, a.queryid, a.weight, a.state,
         a.xact_start, a.top_level_query, a.blockers, a.blockerpid,
         a.blocker_state, a.blocker_usesysid, a.blocking_pids, a.lock_type,
         a.lock_relation, a.lock_target, a.lock_mode, a.blocker_lock_modes,
         -- (another server's relation OIDs mean nothing in this catalog)
         NULL::text AS lock_db
    FROM (
--@include fleet_rows
         ) a),
 roll_samples AS MATERIALIZED (
  SELECT s.sample_time, s.weight, s.active_sessions
    FROM %1$I.pgsentinel_fleet_sample_archive s
   WHERE s.server_id = $1 AND s.sample_time >= $2 AND s.sample_time < $3
     AND s.batch_start >= date_trunc('day', $2, 'UTC') AND s.batch_start < $3
     AND s.batch_end >= $2),
--@include rollups fleet
 rolled AS (SELECT 1)
SELECT (SELECT count(*) FROM roll_samples)::int8, (SELECT count(*) FROM roll_rows)::int8
$sql$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_roll_sql() FROM PUBLIC;

-- Roll up what is whole of the named server, or of every server (NULL),
-- at most ten minutes of its rows per call (the archiver calls it after
-- each tick, every pgsentinel_archive.interval: a server that comes back
-- after a long gap catches up ten minutes at a time, the gap itself passed
-- at once; the blocking parts of a busy server's rows make one JSON value,
-- which must stay far below jsonb's limit).  Every server: those rolled up
-- least far first, and no new one after a minute (the next call goes on),
-- so that a fleet catching up never makes a call run into its timeout and
-- roll up nothing.  An error on one server is kept in its last_error and
-- the others go on; when one server was named, the error is raised.
-- Returns, per server, where its rollups end and what this call rolled up.
CREATE FUNCTION pgsentinel_fleet_roll(server text DEFAULT NULL)
RETURNS TABLE (name text, rolled_until timestamptz, samples_rolled bigint,
               rows_rolled bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s constant name := (pg_catalog.parse_ident('@extschema@'))[1];
    f record;
    t record;
    q text;
    whole timestamptz;
    nxt timestamptz;
    lo timestamptz;
    hi timestamptz;
    hlo timestamptz;
    hhi timestamptz;
    redo boolean;
    started timestamptz := clock_timestamp();
BEGIN
    IF server IS NOT NULL THEN
        PERFORM @extschema@.pgsentinel_fleet_server_id(server);
    END IF;
    SELECT @extschema@.pgsentinel_fleet_roll_sql() INTO q;
    FOR f IN EXECUTE format('SELECT f.server_id, f.name, f.node FROM %I.pgsentinel_fleet_server f
                              WHERE $1 IS NULL OR f.name = $1
                              ORDER BY f.rolled_until NULLS FIRST, f.server_id', s) USING server LOOP
        EXIT WHEN server IS NULL AND clock_timestamp() > started + interval '1 minute';
        name := f.name;
        samples_rolled := 0;
        rows_rolled := 0;
        BEGIN
            -- one roll of a server at a time (and none during its pull):
            -- its row, locked
            EXECUTE format($q$
                SELECT x.rolled_until, x.hours_rolled_until,
                       CASE WHEN x.method = 'pull' THEN x.pulled_until
                            WHEN EXISTS (SELECT FROM pg_subscription_rel r
                                          WHERE r.srsubid = x.feed::oid
                                            AND r.srsubstate <> 'r')
                            THEN NULL
                            -- ($1, not x.server_id: known when planned, the
                            -- other servers' partitions, on other nodes
                            -- maybe, are not opened)
                            ELSE (SELECT m.last_time FROM %1$I.pgsentinel_fleet_batch m
                                   WHERE m.server_id = $1
                                   ORDER BY m.first_time DESC LIMIT 1) END AS whole
                  FROM %1$I.pgsentinel_fleet_server x
                 WHERE x.server_id = $1 FOR UPDATE OF x$q$, s)
                INTO lo, hlo, whole USING f.server_id;
            EXECUTE format('SELECT min(m.sample_time) FROM %I.pgsentinel_fleet_sample_archive m
                             WHERE m.server_id = $1 AND m.sample_time >= $2
                               AND m.batch_start >= date_trunc(''day'', $2, ''UTC'')
                               AND m.batch_end >= $2', s)
                INTO nxt USING f.server_id, coalesce(lo, '-infinity');
            lo := coalesce(lo, date_trunc('minute', nxt, 'UTC'));
            -- (least() would pass over a NULL: nothing whole yet)
            hi := CASE WHEN whole IS NOT NULL
                       THEN least(date_trunc('minute', whole, 'UTC'),
                                  date_trunc('minute', nxt, 'UTC') + interval '10 minutes') END;
            IF hi > lo THEN
                hlo := coalesce(hlo, date_trunc('hour', lo, 'UTC'));
                hhi := greatest(hlo, date_trunc('hour', hi, 'UTC'));
                -- the partitions of the days (months) it fills
                PERFORM @extschema@.pgsentinel_fleet_partitions(f.server_id, (timezone('UTC', greatest(hlo, date_trunc('hour', nxt, 'UTC')))::date), (timezone('UTC', hi)::date));
                -- Rollups on another node commit there before this
                -- transaction does (postgres_fdw has no two-phase commit):
                -- after a crash between the two, this roll finds what the
                -- lost one wrote there, and replaces it.  A lost roll wrote
                -- its minutes' observed rows and its hours' together with
                -- the rest, in the node's one transaction: found first,
                -- they spare a roll the deletes when there is nothing.
                redo := false;
                IF f.node IS NOT NULL THEN
                    EXECUTE format($q$
                        SELECT EXISTS (SELECT FROM %1$I.pgsentinel_fleet_rollup_minute_observed o
                                        WHERE o.server_id = $1 AND o.bucket >= $2)
                            OR ($4 > $3
                                AND EXISTS (SELECT FROM %1$I.pgsentinel_fleet_rollup_hour_observed o
                                             WHERE o.server_id = $1 AND o.bucket >= $3))$q$, s)
                        INTO redo USING f.server_id, lo, hlo, hhi;
                END IF;
                IF redo THEN
                    FOR t IN EXECUTE format('SELECT p.parent, p.retention
                                               FROM %I.pgsentinel_fleet_partitioned() p
                                              WHERE p.retention = ''minute''
                                                 OR (p.retention = ''hour'' AND $1 > $2)', s)
                                    USING hhi, hlo LOOP
                        EXECUTE format('DELETE FROM %I.%I WHERE server_id = $1
                                           AND bucket >= $2 AND bucket < $3', s, t.parent)
                            USING f.server_id,
                                  CASE t.retention WHEN 'minute' THEN lo ELSE hlo END,
                                  CASE t.retention WHEN 'minute' THEN hi ELSE hhi END;
                    END LOOP;
                END IF;
                EXECUTE format(q, s) INTO samples_rolled, rows_rolled
                    USING f.server_id, lo, hi, hlo, hhi;
                EXECUTE format('UPDATE %I.pgsentinel_fleet_server
                                   SET rolled_until = $2, hours_rolled_until = $3,
                                       last_error = CASE WHEN last_error LIKE ''rollups: %%''
                                                         THEN NULL ELSE last_error END
                                 WHERE server_id = $1', s)
                    USING f.server_id, hi, hhi;
                lo := hi;
            END IF;
            rolled_until := lo;
        EXCEPTION WHEN OTHERS THEN
            IF server IS NOT NULL THEN
                RAISE;
            END IF;
            EXECUTE format('UPDATE %I.pgsentinel_fleet_server SET last_error = $2
                             WHERE server_id = $1', s)
                USING f.server_id, 'rollups: ' || SQLERRM;
            rolled_until := NULL;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION pgsentinel_fleet_roll(text) FROM PUBLIC;
