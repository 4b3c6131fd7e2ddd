-- All of a job's attempts, by number.
SELECT {a.attempt_columns}
FROM attempts a WHERE a.job_id = ?1 ORDER BY a.number
