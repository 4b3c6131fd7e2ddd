-- A job's history, oldest first.
SELECT job_id, attempt_id, at, kind, actor, detail FROM job_events WHERE job_id = ?1 ORDER BY id
