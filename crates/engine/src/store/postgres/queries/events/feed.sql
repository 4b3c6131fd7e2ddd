-- At most $4 events of owner $1's jobs after position ($2 transaction, $3 id), in feed order:
-- (tx, id), and only events whose transaction had ended for every snapshot when this statement
-- began (below the xmin of its own snapshot), so none can still appear before a later position.
SELECT e.tx::text::bigint AS tx, e.id, e.job_id::text AS job_id, e.attempt_id::text AS attempt_id,
       onejob_time(e.at) AS at, e.kind, e.actor, e.detail::text AS detail
FROM job_events AS e
JOIN jobs AS j ON j.id = e.job_id
WHERE (e.tx, e.id) > ($2::text::xid8, $3::bigint)
  AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
  AND j.owner_id = $1
ORDER BY e.tx, e.id
LIMIT $4
