-- All of a job's attempts, by number.
SELECT a.id, a.job_id, a.number, a.provider, a.state, a.job_version, a.request_id,
       a.http_status, a.error_kind, a.error_message, a.executor_id, a.lease_expires_at,
       a.flagged_for_review, a.created_at, a.sent_at, a.finished_at, a.usage
FROM attempts a WHERE a.job_id = ?1 ORDER BY a.number
