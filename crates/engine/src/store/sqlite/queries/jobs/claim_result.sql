-- The compare-and-swap of SPEC §5: the result goes to attempt ?2 only if the job is still at
-- version ?4, nobody has claimed it, and it is open. Returns the job as it
-- then stands; no row when the answer lost. ?1 result (JSON text), ?3 job id.
UPDATE jobs SET status = 'succeeded', result = ?1, completed_by = ?2, error = NULL,
       version = version + 1, not_before = NULL, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?3 AND version = ?4 AND completed_by IS NULL
  AND status IN ('queued', 'running', 'unknown')
RETURNING {job_columns}
