-- The job's next attempt, pending. While another is open the partial unique index refuses it:
-- that refusal is the only check. ?1 id, ?2 job id, ?3 provider, ?4 the job's version.
INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
VALUES (?1, ?2, (SELECT coalesce(max(number), 0) + 1 FROM attempts WHERE job_id = ?2), ?3,
        'pending', ?4, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
RETURNING id, job_id, number, provider, state, job_version, request_id,
       http_status, error_kind, error_message, executor_id, lease_expires_at,
       flagged_for_review, created_at, sent_at, finished_at, usage
