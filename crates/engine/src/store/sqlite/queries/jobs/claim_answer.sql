-- The compare-and-swap of SPEC §5 for the answer of attempt ?1, while it is in flight or
-- unknown, with the attempt's move to `succeeded` and its event, in one call. The result ?2
-- (JSON text) goes to the attempt only if its job is still at the version the attempt began
-- at, nobody has claimed it, and it is open. ?3 the event's kind, ?4 its actor, ?5 its detail
-- (JSON text; the state the attempt moved from is added as "from"); the response head the
-- answer carries, ?6 request id and ?7 HTTP status (NULL leaves a column).
-- Rows: the job as it then stands, then the attempt as moved; none when nothing was written
-- (the answer lost, or the attempt is in another state: the caller reads why).
UPDATE jobs SET status = 'succeeded', result = ?2, completed_by = ?1, error = NULL,
       version = version + 1, not_before = NULL,
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = (SELECT job_id FROM attempts WHERE id = ?1 AND state IN ('in_flight', 'unknown'))
  AND version = (SELECT job_version FROM attempts WHERE id = ?1)
  AND completed_by IS NULL AND status IN ('queued', 'running', 'unknown')
RETURNING {job_columns};
-- changes() counts the rows the UPDATE above changed itself (1 or 0); the event is written
-- before the move so that it can name the state moved from.
INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
SELECT job_id, id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?3, ?4, json_set(?5, '$.from', state)
FROM attempts WHERE id = ?1 AND changes() = 1;
UPDATE attempts SET state = 'succeeded', lease_expires_at = NULL,
    request_id = coalesce(?6, request_id), http_status = coalesce(?7, http_status),
    finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1 AND state IN ('in_flight', 'unknown') AND changes() = 1
RETURNING {attempt_columns};
