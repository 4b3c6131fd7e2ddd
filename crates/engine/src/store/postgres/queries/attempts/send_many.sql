-- PostgreSQL only: `move.sql` from `pending` to `in_flight` for the executor, for several
-- attempts in one statement (a run of the group commit's writes, each attempt of another job).
-- Attempt $1[i] moves only while it is `pending` and its job `running` without a result,
-- taking executor $2[i] and a lease of $3[i] milliseconds from the moment it is written
-- (clock_timestamp(), by the database's clock: never from the start of a transaction that waited),
-- and gets its event ($5 kind, $6 actor, detail $4[i], JSON text). Returns the attempts that
-- moved, with the columns of columns/attempt.sql; one not returned wrote nothing, and its
-- caller reads why, as after `move.sql`.
WITH i AS (
    SELECT * FROM unnest((SELECT $1::uuid[]), (SELECT $2::text[]), (SELECT $3::bigint[]),
                         (SELECT $4::text[])) AS i (id, executor_id, lease_ms, detail)
), a AS (
    UPDATE attempts SET state = 'in_flight', executor_id = i.executor_id,
        lease_expires_at = date_trunc('milliseconds', clock_timestamp())
                           + i.lease_ms * interval '1 millisecond',
        sent_at = onejob_now()
    FROM i
    WHERE attempts.id = i.id AND attempts.state = 'pending'
      AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = attempts.job_id
                  AND j.status = 'running' AND j.completed_by IS NULL)
    RETURNING attempts.*, i.detail AS event_detail
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $5, $6, a.event_detail::json FROM a
)
SELECT {a.attempt_columns}
FROM a
