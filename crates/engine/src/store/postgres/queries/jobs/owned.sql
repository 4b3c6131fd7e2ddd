-- The owner's job by id. An id that is not a UUID names no job.
SELECT id::text AS id, owner_id, idempotency_key, fingerprint, intent::text AS intent, status, version,
       completed_by::text AS completed_by, result::text AS result, error::text AS error, flagged_for_review,
       onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at,
       onejob_time(finished_at) AS finished_at, onejob_time(not_before) AS not_before
FROM jobs WHERE id = onejob_uuid($1) AND owner_id = $2
