-- A job by id, whoever owns it, then its attempts by number, in one call: the first row is
-- the job; none when there is no such job.
SELECT id, owner_id, idempotency_key, fingerprint, intent, status, version, completed_by,
       result, error, flagged_for_review, created_at, updated_at, finished_at, not_before
FROM jobs WHERE id = ?1;
SELECT a.id, a.job_id, a.number, a.provider, a.state, a.job_version, a.request_id,
       a.http_status, a.error_kind, a.error_message, a.executor_id, a.lease_expires_at,
       a.flagged_for_review, a.created_at, a.sent_at, a.finished_at, a.usage
FROM attempts a WHERE a.job_id = ?1 ORDER BY a.number;
