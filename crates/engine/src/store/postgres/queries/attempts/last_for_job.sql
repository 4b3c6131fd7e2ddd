-- The job's last attempt, if any.
SELECT {a.attempt_columns}
FROM attempts a WHERE a.job_id = onejob_uuid($1) ORDER BY a.number DESC LIMIT 1
