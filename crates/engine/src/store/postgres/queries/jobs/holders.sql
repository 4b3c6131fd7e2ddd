-- The jobs holding the keys of a group: one row per job.
-- $1 the group's JSON array of [id, owner, key, …], as for insert_many.
SELECT id::text AS id, owner_id, idempotency_key, fingerprint, intent::text AS intent, status, version,
       completed_by::text AS completed_by, result::text AS result, error::text AS error, flagged_for_review,
       onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at,
       onejob_time(finished_at) AS finished_at, onejob_time(not_before) AS not_before
FROM jobs WHERE (owner_id, idempotency_key) IN (SELECT g.e ->> 1, g.e ->> 2 FROM json_array_elements($1::json) AS g (e))
