-- A new queued job at version 0, unless the owner already used the key: then no row.
-- ?1 id, ?2 owner, ?3 key, ?4 fingerprint, ?5 intent (JSON text).
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, 'queued', 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
RETURNING id, owner_id, idempotency_key, fingerprint, intent, status, version, completed_by,
       result, error, flagged_for_review, created_at, updated_at, finished_at, not_before
