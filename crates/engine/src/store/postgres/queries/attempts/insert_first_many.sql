-- Queued jobs' first attempts, at their routes' primaries (where the route policy starts every
-- job), in one statement: the jobs a pass claims, which its read already locked, or one job
-- (the SQLite ledger's `attempts/insert_first.sql` takes one). Job $2[i] gets its first
-- attempt $1[i], `pending` at its route's primary, with its `attempt_created` event ($3 kind,
-- $4 actor), and moves from `queued` to `running`, each only while it is queued with no backoff set and no attempt yet,
-- and its primary is configured, and its contract, if it names one, too. The jobs are locked
-- in id order first.
-- Rows: each attempt inserted, beside its job as moved (JSON text with the columns of
-- columns/job.sql); a job with no row had nothing written, and its caller decides by the policy.
WITH i AS (
    SELECT * FROM unnest((SELECT $1::uuid[]), (SELECT $2::uuid[])) AS i (id, job_id)
), j AS (
    SELECT i.id AS attempt_id, jobs.id, jobs.version, jobs.intent->'route'->>0 AS provider,
           jobs.intent->>'contract' AS contract
    FROM i JOIN jobs ON jobs.id = i.job_id
    WHERE jobs.status = 'queued' AND jobs.not_before IS NULL
    ORDER BY jobs.id
    FOR NO KEY UPDATE OF jobs
), a AS (
    INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
    SELECT j.attempt_id, j.id, 1, j.provider, 'pending', j.version, onejob_now()
    FROM j
    WHERE NOT EXISTS (SELECT 1 FROM attempts WHERE job_id = j.id)
      AND EXISTS (SELECT 1 FROM providers WHERE name = j.provider)
      AND (j.contract IS NULL OR EXISTS (SELECT 1 FROM contracts WHERE name = j.contract))
    ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
    RETURNING *
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $3, $4,
           json_build_object('number', a.number, 'provider', a.provider, 'explicit', false)
    FROM a
), moved AS (
    UPDATE jobs SET status = 'running', not_before = NULL, updated_at = onejob_now()
    FROM a
    WHERE jobs.id = a.job_id AND jobs.status = 'queued'
    RETURNING jobs.*
)
SELECT {a.attempt_columns},
       (SELECT row_to_json(r)::text FROM (
            SELECT {m.job_columns}
            FROM moved m WHERE m.id = a.job_id) r) AS job
FROM a
