-- A job by id, whoever owns it, then its attempts by number, in one call: the first row is
-- the job; none when there is no such job.
SELECT {job_columns}
FROM jobs WHERE id = ?1;
SELECT {a.attempt_columns}
FROM attempts a WHERE a.job_id = ?1 ORDER BY a.number;
