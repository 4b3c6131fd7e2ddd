-- Moves attempt ?10 from exactly state ?11 to ?1, setting what the move records; with ?12 only
-- while its job is running without a result.
-- ?2/?3 error kind and message, ?4 HTTP status, ?5 executor, ?6 the lease in milliseconds
-- from now (kept only in flight), ?7 sent?, ?8 finished?, ?9 flag for review?; NULL leaves a
-- column.
UPDATE attempts SET state = ?1,
    error_kind = coalesce(?2, error_kind), error_message = coalesce(?3, error_message),
    http_status = coalesce(?4, http_status), executor_id = coalesce(?5, executor_id),
    lease_expires_at = CASE WHEN ?1 = 'in_flight' THEN coalesce(
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (?6 / 1000.0) || ' seconds'),
        lease_expires_at) ELSE NULL END,
    sent_at = CASE WHEN ?7 THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE sent_at END,
    finished_at = CASE WHEN ?8 THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE finished_at END,
    flagged_for_review = max(flagged_for_review, ?9)
WHERE id = ?10 AND state = ?11
  AND (NOT ?12 OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = attempts.job_id
                          AND j.status = 'running' AND j.completed_by IS NULL))
