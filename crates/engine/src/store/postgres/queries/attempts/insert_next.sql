-- The job's next attempt, pending, with its `attempt_created` event, and with $8 its job moved
-- from `queued` to `running`, in one statement. Nothing is written while another attempt is
-- open (the partial unique index refuses it, and that refusal is the only check; DO NOTHING
-- keeps the transaction usable to read the open attempt that caused it) or when no provider $3
-- is configured.
-- $1 id, $2 job id, $3 provider, $4 the job's version; the event's $5 kind, $6 actor, and
-- $7 whether a person chose the provider; $9 the bulk operation that applied a person's
-- action, which the event names (`"bulk": id`), or NULL.
-- Row: the attempt as inserted, beside its job as moved (JSON text with the columns of
-- columns/job.sql; NULL when the job was not moved); none when nothing was written. The job
-- comes back in the same row, not read again by a second statement.
WITH a AS (
    INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
    SELECT $1::uuid, $2::uuid,
           (SELECT coalesce(max(number), 0) + 1 FROM attempts WHERE job_id = $2::uuid), $3,
           'pending', $4, onejob_now()
    WHERE EXISTS (SELECT 1 FROM providers WHERE name = $3)
    ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
    RETURNING *
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $5, $6,
           CASE WHEN $9::text IS NULL
                THEN json_build_object('number', a.number, 'provider', a.provider,
                                       'explicit', $7::boolean)
                ELSE json_build_object('number', a.number, 'provider', a.provider,
                                       'explicit', $7::boolean, 'bulk', $9::text)
           END
    FROM a
), moved AS (
    UPDATE jobs SET status = 'running', not_before = NULL, updated_at = onejob_now()
    WHERE id = $2::uuid AND $8 AND status = 'queued' AND EXISTS (SELECT 1 FROM a)
    RETURNING *
)
SELECT {a.attempt_columns},
       (SELECT row_to_json(r)::text FROM (
            SELECT {m.job_columns}
            FROM moved m) r) AS job
FROM a
