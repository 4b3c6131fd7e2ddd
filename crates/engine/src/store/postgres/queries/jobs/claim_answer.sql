-- The compare-and-swap of SPEC §5 for the answer of attempt $1, while it is in flight or
-- unknown, with the attempt's move to `succeeded` and its event, in one statement. The result
-- $2 (JSON text) goes to the attempt only if its job is still at the version the attempt began
-- at, nobody has claimed it, and it is open. $3 the event's kind, $4 its actor, $5 its detail
-- (JSON text; the state the attempt moved from is added as "from"); the response head the
-- answer carries, $6 request id and $7 HTTP status (NULL leaves a column).
-- Returns the job as it then stands, and the attempt as moved (JSON text with the columns of
-- attempts/by_id.sql; NULL when it did not move); no row when nothing was written (the answer
-- lost, or the attempt is in another state: the caller reads why). The attempt is locked
-- first, so a concurrent move of it (a person's verdict) either waits for this one or is seen
-- by it; under READ COMMITTED a second answer waits for the first's job row lock and then
-- updates nothing.
WITH a AS (
    SELECT id, job_id, job_version, state FROM attempts
    WHERE id = onejob_uuid($1) AND state IN ('in_flight', 'unknown')
    FOR UPDATE
), won AS (
    UPDATE jobs j SET status = 'succeeded', result = $2::json, completed_by = a.id, error = NULL,
           version = j.version + 1, not_before = NULL, updated_at = onejob_now(),
           finished_at = onejob_now()
    FROM a
    WHERE j.id = a.job_id AND j.version = a.job_version AND j.completed_by IS NULL
      AND j.status IN ('queued', 'running', 'unknown')
    RETURNING j.*
), moved AS (
    UPDATE attempts t SET state = 'succeeded', lease_expires_at = NULL, finished_at = onejob_now(),
           request_id = coalesce($6, t.request_id), http_status = coalesce($7, t.http_status)
    FROM won
    WHERE t.id = won.completed_by AND t.state IN ('in_flight', 'unknown')
    RETURNING t.*
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $3, $4,
           jsonb_set($5::jsonb, '{from}', to_jsonb(a.state))::json
    FROM a JOIN moved ON moved.id = a.id
)
SELECT won.id::text AS id, owner_id, idempotency_key, fingerprint, intent::text AS intent, status,
       version, completed_by::text AS completed_by, result::text AS result, error::text AS error,
       flagged_for_review, onejob_time(created_at) AS created_at,
       onejob_time(updated_at) AS updated_at, onejob_time(finished_at) AS finished_at,
       onejob_time(not_before) AS not_before,
       (SELECT row_to_json(r)::text FROM (
            SELECT m.id::text AS id, m.job_id::text AS job_id, m.number, m.provider, m.state,
                   m.job_version, m.request_id, m.http_status, m.error_kind, m.error_message,
                   m.executor_id, onejob_time(m.lease_expires_at) AS lease_expires_at,
                   m.flagged_for_review, onejob_time(m.created_at) AS created_at,
                   onejob_time(m.sent_at) AS sent_at, onejob_time(m.finished_at) AS finished_at,
                   m.usage::text AS usage
            FROM moved m) r) AS attempt
FROM won
