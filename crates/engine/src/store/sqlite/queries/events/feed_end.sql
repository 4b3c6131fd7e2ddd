-- The feed's end now: the last committed event (ids are in commit order, see feed.sql).
SELECT 0 AS tx, COALESCE(MAX(id), 0) AS id FROM job_events
