-- At most ?4 events of owner ?1's jobs after position ?3, in feed order. Writers hold the write
-- lock from their first statement to their commit, so id order is commit order: the position is
-- the id alone (?2, a PostgreSQL position's transaction, is always 0 here). The events after the
-- position are the outer loop (a CROSS JOIN is never reordered), each job found by its key: the
-- position passes over other owners' events (see events::feed_passed), so a poll reads what is
-- new, never the owner's whole history.
SELECT 0 AS tx, e.id, e.job_id, e.attempt_id, e.at, e.kind, e.actor, e.detail
FROM job_events AS e
CROSS JOIN jobs AS j
WHERE j.id = e.job_id AND e.id > ?3 AND j.owner_id = ?1
ORDER BY e.id
LIMIT ?4
