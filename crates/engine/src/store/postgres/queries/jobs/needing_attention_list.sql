-- Up to $2 of the owner's jobs that need a person, most recently updated first; the partial
-- index holds only those few.
SELECT id::text AS id, owner_id, idempotency_key, fingerprint, intent::text AS intent, status, version,
       completed_by::text AS completed_by, result::text AS result, error::text AS error, flagged_for_review,
       onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at,
       onejob_time(finished_at) AS finished_at, onejob_time(not_before) AS not_before
FROM jobs
WHERE owner_id = $1 AND (status = 'unknown' OR flagged_for_review)
ORDER BY jobs.updated_at DESC, jobs.id DESC LIMIT $2
