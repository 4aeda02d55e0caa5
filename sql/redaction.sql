--
-- Redaction: of the sessions of other roles, a role that is neither
-- superuser, nor in pg_read_all_stats, nor a member of theirs sees only what
-- pg_stat_activity would show it (docs/visibility.md).
--
SELECT current_user AS superuser \gset
CREATE ROLE regress_pgs_alice LOGIN;
GRANT EXECUTE ON FUNCTION pgs_sleep_until_sampled() TO regress_pgs_alice;

-- A superuser session is sampled.
SELECT pg_backend_pid() AS superuser_pid \gset
SELECT pgs_sleep_until_sampled();

-- Alice is sampled too, in her own session.
\c - regress_pgs_alice
SELECT pgs_sleep_until_sampled();

-- Alice sees all of her own row.  Of the superuser's newest row she sees
-- "<insufficient privilege>" for the texts and NULL in the columns listed:
-- the columns pg_stat_activity hides, with a NULL (not 'CPU') wait event,
-- and cmdtype.  (backend_xid and backend_xmin are shown to all and may be
-- NULL or not.)
SELECT usename = 'regress_pgs_alice' AS alice_row,
       top_level_query, query,
       (SELECT string_agg(key, ', ' ORDER BY key) FROM jsonb_each(to_jsonb(h))
        WHERE value = 'null' AND key NOT IN ('backend_xid', 'backend_xmin'))
         AS null_columns
FROM (SELECT DISTINCT ON (usename = 'regress_pgs_alice') *
      FROM pg_active_session_history
      WHERE pid = :superuser_pid
         OR (usename = 'regress_pgs_alice' AND wait_event = 'PgSleep')
      ORDER BY usename = 'regress_pgs_alice', sample_id DESC) h
ORDER BY 1;

-- The weight of a row stays, whoever reads it (docs/visibility.md): the
-- reports' load counts every session for every reader.  It tells that the
-- superuser's session was active (its sample's period; 0 would say idle
-- in transaction), though its state is hidden.
SELECT state, weight > 0 AS weight_says_active
FROM pg_active_session_history
WHERE pid = :superuser_pid
ORDER BY sample_id DESC LIMIT 1;

-- Membership in pg_read_all_stats lifts the redaction: the superuser's
-- rows show their wait event, state, command type and query id again.
\c - :superuser
GRANT pg_read_all_stats TO regress_pgs_alice;
\c - regress_pgs_alice
SELECT count(*) AS hidden_rows
FROM pg_active_session_history
WHERE top_level_query = '<insufficient privilege>';
SELECT wait_event, state, cmdtype, queryid IS NOT NULL AS has_queryid
FROM pg_active_session_history
WHERE pid = :superuser_pid AND wait_event = 'PgSleep'
ORDER BY sample_id DESC LIMIT 1;

\c - :superuser
REVOKE EXECUTE ON FUNCTION pgs_sleep_until_sampled() FROM regress_pgs_alice;
REVOKE pg_read_all_stats FROM regress_pgs_alice;
DROP ROLE regress_pgs_alice;
