-- The owner's job holding the key.
SELECT id, owner_id, idempotency_key, fingerprint, intent, status, version, completed_by,
       result, error, flagged_for_review, created_at, updated_at, finished_at, not_before
FROM jobs WHERE owner_id = ?1 AND idempotency_key = ?2
