-- The body sent for attempt number ?2 of job ?1; no row when none was recorded.
SELECT e.body FROM attempt_evidence e JOIN attempts a ON a.id = e.attempt_id
WHERE a.job_id = ?1 AND a.number = ?2
