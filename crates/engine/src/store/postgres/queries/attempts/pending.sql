-- Up to $1 attempts committed pending (never sent) whose job is running, oldest first.
SELECT {a.attempt_columns}
FROM attempts a JOIN jobs j ON j.id = a.job_id
WHERE a.state = 'pending' AND j.status = 'running' ORDER BY a.id LIMIT $1
