-- Records owner ?2's bulk operation ?1 under key ?3 (fingerprint ?4, action ?5, params ?6 as JSON
-- text), running and matching nothing yet, unless the key is taken; one row affected when it was.
INSERT INTO bulk_operations (id, owner_id, idempotency_key, fingerprint, action, params, state,
                             matched, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
