-- A group's new queued jobs at version 0 in one statement, each unless its owner already used
-- its key (then that row is skipped; the unique constraint decides, a key twice in the group
-- included). The schema's triggers check each job's names and write its `submitted` event and
-- `job_providers`; one refused job fails the statement.
-- $1 a JSON array with one [id, owner, key, fingerprint, intent (JSON text)] per submit.
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
SELECT (g.e ->> 0)::uuid, g.e ->> 1, g.e ->> 2, g.e ->> 3, (g.e ->> 4)::json, 'queued', 0, onejob_now(), onejob_now()
FROM json_array_elements($1::json) WITH ORDINALITY AS g (e, n) ORDER BY g.n
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
