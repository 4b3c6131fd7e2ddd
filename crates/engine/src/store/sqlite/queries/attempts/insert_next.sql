-- The job's next attempt, pending; no row while another is open: the partial unique index
-- refuses it, and that refusal is the only check. (DO NOTHING keeps a PostgreSQL transaction
-- usable after the refusal, to read the open attempt that caused it.)
-- ?1 id, ?2 job id, ?3 provider, ?4 the job's version.
INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
VALUES (?1, ?2, (SELECT coalesce(max(number), 0) + 1 FROM attempts WHERE job_id = ?2), ?3,
        'pending', ?4, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
RETURNING id, job_id, number, provider, state, job_version, request_id,
       http_status, error_kind, error_message, executor_id, lease_expires_at,
       flagged_for_review, created_at, sent_at, finished_at, usage
