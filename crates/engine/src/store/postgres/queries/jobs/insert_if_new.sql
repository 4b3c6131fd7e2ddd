-- A new queued job at version 0, unless the owner already used the key: then no row.
-- $1 id, $2 owner, $3 key, $4 fingerprint, $5 intent (JSON text).
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
VALUES ($1::uuid, $2, $3, $4, $5::json, 'queued', 0, onejob_now(), onejob_now())
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
RETURNING id::text AS id, owner_id, idempotency_key, fingerprint, intent::text AS intent, status, version,
       completed_by::text AS completed_by, result::text AS result, error::text AS error, flagged_for_review,
       onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at,
       onejob_time(finished_at) AS finished_at, onejob_time(not_before) AS not_before
