-- The job's next attempt, pending, with its `attempt_created` event, in one statement; no row,
-- and no event, while another is open: the partial unique index refuses it, and that refusal
-- is the only check. (DO NOTHING keeps a PostgreSQL transaction usable after the refusal, to
-- read the open attempt that caused it.)
-- $1 id, $2 job id, $3 provider, $4 the job's version; the event's $5 kind, $6 actor, and
-- $7 whether a person chose the provider.
WITH a AS (
    INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
    VALUES ($1::uuid, $2::uuid,
            (SELECT coalesce(max(number), 0) + 1 FROM attempts WHERE job_id = $2::uuid), $3,
            'pending', $4, onejob_now())
    ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
    RETURNING *
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $5, $6,
           json_build_object('number', a.number, 'provider', a.provider, 'explicit', $7::boolean)
    FROM a
)
SELECT a.id::text AS id, a.job_id::text AS job_id, a.number, a.provider, a.state, a.job_version,
       a.request_id, a.http_status, a.error_kind, a.error_message, a.executor_id,
       onejob_time(a.lease_expires_at) AS lease_expires_at, a.flagged_for_review,
       onejob_time(a.created_at) AS created_at, onejob_time(a.sent_at) AS sent_at,
       onejob_time(a.finished_at) AS finished_at, a.usage::text AS usage
FROM a
