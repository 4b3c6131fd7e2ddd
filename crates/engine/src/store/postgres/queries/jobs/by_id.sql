-- A job by id, whoever owns it. An id that is not a UUID names no job.
SELECT {job_columns}
FROM jobs WHERE id = onejob_uuid($1)
