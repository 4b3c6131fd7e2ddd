-- Moves a job from exactly ?8 to ?1; returns the job as moved, no row when it was not in
-- that status.
-- ?2 set the error? ?3 the error (JSON text), ?4 1 to bump the version, ?5 finished?,
-- ?6 clear the backoff?, ?7 id.
UPDATE jobs SET status = ?1,
    error = CASE WHEN ?2 THEN ?3 ELSE error END,
    version = version + ?4,
    finished_at = CASE WHEN ?5 THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE finished_at END,
    not_before = CASE WHEN ?6 THEN NULL ELSE not_before END,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?7 AND status = ?8
RETURNING {job_columns}
