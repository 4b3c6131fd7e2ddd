-- A lone submit, committed by its own statements in one call: the job is inserted unless the
-- owner already used the key (the unique constraint decides; the schema's triggers check the
-- names and write the `submitted` event and `job_providers` in the INSERT), then the job holding
-- the key is read inside the same write transaction. The row is the caller's only once every
-- statement, COMMIT included, has succeeded; after a failure the caller rolls back.
-- ?1 id, ?2 owner, ?3 key, ?4 fingerprint, ?5 intent (JSON text).
BEGIN IMMEDIATE;
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, 'queued', 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (owner_id, idempotency_key) DO NOTHING;
SELECT id, owner_id, idempotency_key, fingerprint, intent, status, version, completed_by,
       result, error, flagged_for_review, created_at, updated_at, finished_at, not_before
FROM jobs WHERE owner_id = ?2 AND idempotency_key = ?3;
COMMIT;
