-- A group's new queued jobs at version 0 in one statement, each unless its owner already used
-- its key (then that row is skipped; the unique constraint decides, a key twice in the group
-- included). The schema's triggers check each job's names and write its `submitted` event and
-- `job_providers`; one refused job fails the statement.
-- ?1 a JSON array with one [id, owner, key, fingerprint, intent (JSON text)] per submit.
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, 'queued', 0,
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM json_each(?1) WHERE true ORDER BY key
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
