-- A submit: alone, one autocommit statement; in a group, the same statement inside the
-- group's write transaction, under a savepoint the caller holds. The job is inserted unless the
-- owner already used the key (the unique constraint decides; the schema's triggers check the
-- names and write the `submitted` event and `job_providers`), and the job holding the key comes
-- back: the new one, or the one that held it before this statement began. No row when the key's
-- holder committed while this statement ran (its snapshot predates that row): the caller reads
-- it then. The answer arrives after the commit (the statement's, or the group's).
-- $1 id, $2 owner, $3 key, $4 fingerprint, $5 intent (JSON text).
WITH new AS (
    INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
    VALUES ($1::uuid, $2, $3, $4, $5::json, 'queued', 0, onejob_now(), onejob_now())
    ON CONFLICT (owner_id, idempotency_key) DO NOTHING
    RETURNING *
), held AS (
    SELECT * FROM new
    UNION ALL
    SELECT * FROM jobs WHERE owner_id = $2 AND idempotency_key = $3 AND NOT EXISTS (SELECT 1 FROM new)
)
SELECT {job_columns}
FROM held
