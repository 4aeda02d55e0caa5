--
-- Objects shared by the regression tests: the extensions, and a helper that
-- waits for the sampler instead of sleeping a fixed time.
--
CREATE EXTENSION pgsentinel;
CREATE EXTENSION pg_stat_statements;

-- Wait until the sampler has taken n more samples (error after 60 s).
CREATE FUNCTION pgs_wait_samples(n int DEFAULT 2) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    start bigint;
    deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
    SELECT samples_taken INTO start FROM pgsentinel_status();
    LOOP
        EXIT WHEN (SELECT samples_taken FROM pgsentinel_status()) >= start + n;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'the sampler took no % samples within 60 s', n;
        END IF;
        PERFORM pg_sleep(0.005);
    END LOOP;
END $$;

-- Wait until cond, a boolean SQL expression, holds (error after 60 s): tests
-- wait for what they check, not for a number of samples.
-- (a poll may read a ring the writer laps meanwhile: its NOTICE is noise)
CREATE FUNCTION pgs_wait_for(cond text, timeout interval DEFAULT '60 s') RETURNS void
LANGUAGE plpgsql SET client_min_messages = warning AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + timeout;
    ok boolean;
BEGIN
    LOOP
        EXECUTE 'SELECT (' || cond || ')' INTO ok;
        EXIT WHEN ok;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'not true within %: %', timeout, cond;
        END IF;
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;

-- Sleep in short steps until this session is seen sleeping in the history.
CREATE FUNCTION pgs_sleep_until_sampled() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
    LOOP
        PERFORM pg_sleep(0.02);
        EXIT WHEN EXISTS (SELECT 1 FROM pg_active_session_history
                          WHERE pid = pg_backend_pid() AND wait_event = 'PgSleep'
                            AND query_start = statement_timestamp());
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'this session was not sampled within 60 s';
        END IF;
    END LOOP;
END $$;

-- Burn CPU until this session is seen on CPU in the history.  The sample
-- seen is left in pgs.seen_sample: rows sampled after the function returned
-- (its statement still ending) are not those of the running function, and
-- rows sampled before its body began (ash_time: when the sampler began
-- reading the sessions) are of its statement being parsed or planned, with
-- no query id or command type yet.
CREATE FUNCTION pgs_spin_until_sampled() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    body_start timestamptz := clock_timestamp();
    deadline timestamptz := clock_timestamp() + interval '60 s';
    x float8 := 0;
    seen bigint;
BEGIN
    LOOP
        FOR i IN 1..20000 LOOP
            x := x + sqrt(i);
        END LOOP;
        SELECT max(sample_id) INTO seen FROM pg_active_session_history
        WHERE pid = pg_backend_pid() AND wait_event_type = 'CPU'
          AND query_start = statement_timestamp() AND ash_time >= body_start;
        PERFORM set_config('pgs.seen_sample', seen::text, false);
        EXIT WHEN seen IS NOT NULL;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'this session was not sampled on CPU within 60 s';
        END IF;
    END LOOP;
END $$;

-- The tests start from empty histories: on a server that ran for a while
-- (make installcheck on a running server) a full ring loses its oldest
-- rows at every sample, between two reads that a test compares.
SELECT pgsentinel_reset() IS NOT NULL AS histories_reset;

SELECT pgs_wait_samples(1);
