-- Bulk operation $1 if owner $2 holds it; no row otherwise.
SELECT id::text AS id, idempotency_key, fingerprint, action, params::text AS params, state,
       matched
FROM bulk_operations WHERE id = onejob_uuid($1) AND owner_id = $2
