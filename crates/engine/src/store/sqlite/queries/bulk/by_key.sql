-- Owner ?1's bulk operation under key ?2; no row when there is none.
SELECT id, idempotency_key, fingerprint, action, params, state, matched
FROM bulk_operations WHERE owner_id = ?1 AND idempotency_key = ?2
