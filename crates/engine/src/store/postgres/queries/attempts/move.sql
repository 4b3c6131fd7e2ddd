-- Moves attempt $10 from exactly state $11 to $1, setting what the move records, and appends
-- the move's event to its job's history, in one statement; with $12 only while its job is
-- running without a result. Returns the attempt as moved; no row, and no event, when it was not
-- in $11.
-- $2/$3 error kind and message, $4 HTTP status, $5 executor, $6 the lease in milliseconds
-- from the moment it is written by the database's clock (clock_timestamp(), not the start of a
-- transaction that may have waited; kept only in flight), $7 sent?, $8 finished?, $9 flag for
-- review?; NULL leaves a column. $13 the event's kind, $14 its actor, $15 its detail (JSON text).
WITH a AS (
    UPDATE attempts SET state = $1,
        error_kind = coalesce($2, error_kind), error_message = coalesce($3, error_message),
        http_status = coalesce($4, http_status), executor_id = coalesce($5, executor_id),
        lease_expires_at = CASE WHEN $1 = 'in_flight'
            THEN coalesce(date_trunc('milliseconds', clock_timestamp()) + $6 * interval '1 millisecond',
                          lease_expires_at) ELSE NULL END,
        sent_at = CASE WHEN $7 THEN onejob_now() ELSE sent_at END,
        finished_at = CASE WHEN $8 THEN onejob_now() ELSE finished_at END,
        flagged_for_review = flagged_for_review OR $9
    WHERE id = onejob_uuid($10) AND state = $11
      AND (NOT $12 OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = attempts.job_id
                               AND j.status = 'running' AND j.completed_by IS NULL))
    RETURNING *
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $13, $14, $15::json FROM a
)
SELECT {a.attempt_columns}
FROM a
