-- Moves attempt ?10 from exactly state ?11 to ?1, setting what the move records, and appends
-- the move's event to its job's history, in one call; with ?12 only while its job is running
-- without a result. Returns the attempt as moved; no row, and no event, when it was not in ?11.
-- ?2/?3 error kind and message, ?4 HTTP status, ?5 executor, ?6 the lease in milliseconds
-- from now (kept only in flight), ?7 sent?, ?8 finished?, ?9 flag for review?; NULL leaves a
-- column. ?13 the event's kind, ?14 its actor, ?15 its detail (JSON text).
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
RETURNING {attempt_columns};
-- changes() counts the rows the UPDATE above changed itself (1 or 0).
INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
SELECT job_id, id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?13, ?14, ?15
FROM attempts WHERE id = ?10 AND changes() = 1;
