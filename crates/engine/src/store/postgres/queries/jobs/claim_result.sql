-- The compare-and-swap of SPEC §5: the result goes to attempt $2 only if the job is still at
-- version $4, nobody has claimed it, and it is open. Returns the job as it
-- then stands; no row when the answer lost. $1 result (JSON text), $3 job id.
-- Under READ COMMITTED a second writer waits for the first's row lock and then re-checks this
-- WHERE against the committed row: it updates nothing and loses.
UPDATE jobs SET status = 'succeeded', result = $1::json, completed_by = $2::uuid, error = NULL,
       version = version + 1, not_before = NULL, updated_at = onejob_now(), finished_at = onejob_now()
WHERE id = onejob_uuid($3) AND version = $4 AND completed_by IS NULL
  AND status IN ('queued', 'running', 'unknown')
RETURNING {job_columns}
