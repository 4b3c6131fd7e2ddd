-- Bulk operation ?1 if owner ?2 holds it; no row otherwise.
SELECT id, idempotency_key, fingerprint, action, params, state, matched
FROM bulk_operations WHERE id = ?1 AND owner_id = ?2
