-- The owner's job by id. An id that is not a UUID names no job.
SELECT {job_columns}
FROM jobs WHERE id = onejob_uuid($1) AND owner_id = $2
