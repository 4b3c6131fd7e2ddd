-- The compare-and-swap of SPEC §5 for answers, each for an attempt of another job, in one
-- statement: a run of the group commit's answers, or one alone (the SQLite ledger's
-- `jobs/claim_answer.sql` takes one answer in three statements). The answer $2[i] (JSON text) of
-- attempt $1[i] goes to its job only while the attempt is in flight or unknown, the job is at
-- the version the attempt began at, nobody has claimed it, and it is open; the attempt then
-- moves to `succeeded` with the response head it carries ($4[i] request id, $5[i] HTTP status;
-- NULL leaves a column) and gets its event ($6 kind, $7 actor, detail $3[i] with the state moved
-- from added as "from"). Attempts are locked in id order, under their jobs' locks, which the
-- group took first.
-- Returns, for each answer that won, the job as it then stands and the attempt as moved (JSON
-- text with the columns of columns/attempt.sql); an answer not returned wrote nothing, and
-- its caller reads why.
WITH i AS (
    SELECT * FROM unnest((SELECT $1::uuid[]), (SELECT $2::text[]), (SELECT $3::text[]),
                         (SELECT $4::text[]), (SELECT $5::bigint[]))
        AS i (id, result, detail, request_id, http_status)
), a AS (
    SELECT t.id, t.job_id, t.job_version, t.state, i.result, i.detail, i.request_id, i.http_status
    FROM attempts t JOIN i ON t.id = i.id
    WHERE t.state IN ('in_flight', 'unknown')
    ORDER BY t.id
    FOR UPDATE OF t
), won AS (
    UPDATE jobs j SET status = 'succeeded', result = a.result::json, completed_by = a.id, error = NULL,
           version = j.version + 1, not_before = NULL, updated_at = onejob_now(),
           finished_at = onejob_now()
    FROM a
    WHERE j.id = a.job_id AND j.version = a.job_version AND j.completed_by IS NULL
      AND j.status IN ('queued', 'running', 'unknown')
    RETURNING j.*
), moved AS (
    UPDATE attempts t SET state = 'succeeded', lease_expires_at = NULL, finished_at = onejob_now(),
           request_id = coalesce(a.request_id, t.request_id),
           http_status = coalesce(a.http_status, t.http_status)
    FROM won JOIN a ON a.id = won.completed_by
    WHERE t.id = won.completed_by AND t.state IN ('in_flight', 'unknown')
    RETURNING t.*
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $6, $7,
           jsonb_set(a.detail::jsonb, '{from}', to_jsonb(a.state))::json
    FROM a JOIN moved ON moved.id = a.id
)
SELECT {won.job_columns},
       (SELECT row_to_json(r)::text FROM (
            SELECT {m.attempt_columns}
            FROM moved m WHERE m.id = won.completed_by) r) AS attempt
FROM won
