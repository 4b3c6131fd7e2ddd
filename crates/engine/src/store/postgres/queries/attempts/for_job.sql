-- All of a job's attempts, by number.
SELECT {a.attempt_columns}
FROM attempts a WHERE a.job_id = onejob_uuid($1) ORDER BY a.number
