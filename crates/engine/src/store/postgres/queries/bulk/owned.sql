-- Bulk operation $1 if owner $2 holds it; no row otherwise.
SELECT id::text AS id, idempotency_key, fingerprint, action, params::text AS params, state,
       matched, onejob_time(created_at) AS created_at, onejob_time(finished_at) AS finished_at
FROM bulk_operations WHERE id = onejob_uuid($1) AND owner_id = $2
