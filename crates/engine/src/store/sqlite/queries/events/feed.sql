-- At most ?4 events of owner ?1's jobs after position ?3, in feed order. Writers hold the write
-- lock from their first statement to their commit, so id order is commit order: the position is
-- the id alone (?2, a PostgreSQL position's transaction, is always 0 here).
SELECT 0 AS tx, e.id, e.job_id, e.attempt_id, e.at, e.kind, e.actor, e.detail
FROM job_events AS e
JOIN jobs AS j ON j.id = e.job_id
WHERE e.id > ?3 AND j.owner_id = ?1
ORDER BY e.id
LIMIT ?4
