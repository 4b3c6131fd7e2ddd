-- A lone submit, one autocommitted statement: the job is inserted unless the owner already
-- used the key (the unique constraint decides; the schema's triggers check the names and write
-- the `submitted` event and `job_providers` in the same statement, so all of it commits or none
-- does). Nothing is returned: one row changed is the new job, as bound, and none means the key
-- was taken; the caller then reads the job holding it (jobs are never deleted, so it is still
-- there).
-- ?1 id, ?2 owner, ?3 key, ?4 fingerprint, ?5 intent (JSON text), ?6 the time it is submitted.
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, 'queued', 0, ?6, ?6)
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
