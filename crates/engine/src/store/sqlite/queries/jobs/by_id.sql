-- A job by id, whoever owns it.
SELECT {job_columns}
FROM jobs WHERE id = ?1
