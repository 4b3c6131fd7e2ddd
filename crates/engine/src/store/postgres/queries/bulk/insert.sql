-- Records owner $2's bulk operation $1 under key $3 (fingerprint $4, action $5, params $6 as JSON
-- text), running and matching nothing yet, unless the key is taken (a transaction that holds it
-- is waited for); one row affected when it was.
INSERT INTO bulk_operations (id, owner_id, idempotency_key, fingerprint, action, params, state,
                             matched, created_at)
VALUES ($1::uuid, $2, $3, $4, $5, $6::json, 'running', 0, onejob_now())
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
