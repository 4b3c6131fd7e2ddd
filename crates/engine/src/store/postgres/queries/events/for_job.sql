-- A job's history, oldest first.
SELECT job_id::text AS job_id, attempt_id::text AS attempt_id, onejob_time(at) AS at, kind, actor,
       detail::text AS detail
FROM job_events WHERE job_id = onejob_uuid($1) ORDER BY id
