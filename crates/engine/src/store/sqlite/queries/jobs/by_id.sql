-- A job by id, whoever owns it.
SELECT id, owner_id, idempotency_key, fingerprint, intent, status, version, completed_by,
       result, error, flagged_for_review, created_at, updated_at, finished_at, not_before
FROM jobs WHERE id = ?1
