-- One submit of a group, inside the group's write transaction and under a savepoint of its
-- own, in one call: the job is inserted unless the owner already used the key (the unique
-- constraint decides; the schema's triggers check the names and write the `submitted` event
-- and `job_providers`), then the job holding the key is read. After a failure the caller rolls
-- back to the savepoint and releases it.
-- ?1 id, ?2 owner, ?3 key, ?4 fingerprint, ?5 intent (JSON text).
SAVEPOINT onejob_step;
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, 'queued', 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (owner_id, idempotency_key) DO NOTHING;
SELECT {job_columns}
FROM jobs WHERE owner_id = ?2 AND idempotency_key = ?3;
RELEASE onejob_step;
