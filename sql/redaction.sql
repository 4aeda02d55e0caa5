--
-- Redaction: other roles' query texts and query ids are hidden from a role
-- that is neither superuser, nor in pg_read_all_stats, nor theirs -- the
-- rule of pg_stat_activity.
--
SELECT current_user AS superuser \gset
CREATE ROLE regress_pgs_alice LOGIN;
GRANT EXECUTE ON FUNCTION pgs_sleep_until_sampled() TO regress_pgs_alice;

-- A superuser session is sampled.
SELECT pgs_sleep_until_sampled();

-- Alice is sampled too, in her own session.
\c - regress_pgs_alice
SELECT pgs_sleep_until_sampled();

-- Alice sees her own texts and ids, and only "<insufficient privilege>"
-- and NULL ids for the superuser's rows.
SELECT usename = 'regress_pgs_alice' AS alice_row,
       top_level_query, query,
       queryid IS NULL AS queryid_hidden,
       nested_queryid IS NULL AS nested_hidden,
       wait_event IS NOT NULL AS wait_visible
FROM (SELECT DISTINCT ON (usename = 'regress_pgs_alice') *
      FROM pg_active_session_history
      WHERE wait_event = 'PgSleep'
        AND usename IN ('regress_pgs_alice', :'superuser')
      ORDER BY usename = 'regress_pgs_alice', sample_id DESC) h
ORDER BY 1;

-- Membership in pg_read_all_stats lifts the redaction.
\c - :superuser
GRANT pg_read_all_stats TO regress_pgs_alice;
\c - regress_pgs_alice
SELECT count(*) AS hidden_rows
FROM pg_active_session_history
WHERE top_level_query = '<insufficient privilege>';

\c - :superuser
REVOKE EXECUTE ON FUNCTION pgs_sleep_until_sampled() FROM regress_pgs_alice;
REVOKE pg_read_all_stats FROM regress_pgs_alice;
DROP ROLE regress_pgs_alice;
