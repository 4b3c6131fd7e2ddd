-- The job's open attempt, if any.
SELECT {a.attempt_columns}
FROM attempts a WHERE a.job_id = ?1 AND a.state IN ('pending', 'in_flight', 'unknown')
