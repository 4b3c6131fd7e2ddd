-- A queued job's first attempt, at its route's primary (where the route policy starts every
-- job), pending, with its `attempt_created` event and the job moved from `queued` to
-- `running`, in one statement. Written only while the job is queued with no backoff set and no
-- attempt yet, its primary is configured, and its contract, if it names one, too; otherwise
-- nothing is written and the caller decides by the policy. The job is locked first, so a
-- concurrent claim or cancel of it waits for this one, then finds it moved.
-- $1 id, $2 job id; the event's $3 kind and $4 actor.
-- Row: the attempt as inserted, beside its job as moved (JSON text with the columns of
-- jobs/by_id.sql; NULL when the job was not moved); none when nothing was written. The job
-- comes back in the same row, not read again by a second statement.
WITH j AS (
    SELECT id, version, intent->'route'->>0 AS provider, intent->>'contract' AS contract
    FROM jobs
    WHERE id = onejob_uuid($2) AND status = 'queued' AND not_before IS NULL
    FOR NO KEY UPDATE
), a AS (
    INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
    SELECT $1::uuid, j.id, 1, j.provider, 'pending', j.version, onejob_now()
    FROM j
    WHERE NOT EXISTS (SELECT 1 FROM attempts WHERE job_id = j.id)
      AND EXISTS (SELECT 1 FROM providers WHERE name = j.provider)
      AND (j.contract IS NULL OR EXISTS (SELECT 1 FROM contracts WHERE name = j.contract))
    ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
    RETURNING *
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $3, $4,
           json_build_object('number', a.number, 'provider', a.provider, 'explicit', false)
    FROM a
), moved AS (
    UPDATE jobs SET status = 'running', not_before = NULL, updated_at = onejob_now()
    WHERE id = onejob_uuid($2) AND status = 'queued' AND EXISTS (SELECT 1 FROM a)
    RETURNING *
)
SELECT a.id::text AS id, a.job_id::text AS job_id, a.number, a.provider, a.state, a.job_version,
       a.request_id, a.http_status, a.error_kind, a.error_message, a.executor_id,
       onejob_time(a.lease_expires_at) AS lease_expires_at, a.flagged_for_review,
       onejob_time(a.created_at) AS created_at, onejob_time(a.sent_at) AS sent_at,
       onejob_time(a.finished_at) AS finished_at, a.usage::text AS usage,
       (SELECT row_to_json(r)::text FROM (
            SELECT m.id::text AS id, m.owner_id, m.idempotency_key, m.fingerprint,
                   m.intent::text AS intent, m.status, m.version, m.completed_by::text AS completed_by,
                   m.result::text AS result, m.error::text AS error, m.flagged_for_review,
                   onejob_time(m.created_at) AS created_at, onejob_time(m.updated_at) AS updated_at,
                   onejob_time(m.finished_at) AS finished_at, onejob_time(m.not_before) AS not_before
            FROM moved m) r) AS job
FROM a
