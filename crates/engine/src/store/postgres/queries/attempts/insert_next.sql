-- The job's next attempt, pending; no row while another is open: the partial unique index
-- refuses it, and that refusal is the only check. (DO NOTHING keeps a PostgreSQL transaction
-- usable after the refusal, to read the open attempt that caused it.)
-- $1 id, $2 job id, $3 provider, $4 the job's version.
INSERT INTO attempts AS a (id, job_id, number, provider, state, job_version, created_at)
VALUES ($1::uuid, $2::uuid,
        (SELECT coalesce(max(number), 0) + 1 FROM attempts WHERE job_id = $2::uuid), $3,
        'pending', $4, onejob_now())
ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
RETURNING a.id::text AS id, a.job_id::text AS job_id, a.number, a.provider, a.state, a.job_version,
       a.request_id, a.http_status, a.error_kind, a.error_message, a.executor_id,
       onejob_time(a.lease_expires_at) AS lease_expires_at, a.flagged_for_review,
       onejob_time(a.created_at) AS created_at, onejob_time(a.sent_at) AS sent_at,
       onejob_time(a.finished_at) AS finished_at, a.usage::text AS usage
