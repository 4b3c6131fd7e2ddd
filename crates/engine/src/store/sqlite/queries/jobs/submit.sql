-- A lone submit, one autocommitted statement: the job is inserted unless the owner already
-- used the key (the unique constraint decides; the schema's triggers check the names and write
-- the `submitted` event and `job_providers` in the same statement, so all of it commits or none
-- does). Returns the new job; no row when the key was taken, and the caller then reads the job
-- holding it (jobs are never deleted, so it is still there).
-- ?1 id, ?2 owner, ?3 key, ?4 fingerprint, ?5 intent (JSON text).
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, 'queued', 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
RETURNING id, owner_id, idempotency_key, fingerprint, intent, status, version, completed_by,
       result, error, flagged_for_review, created_at, updated_at, finished_at, not_before
