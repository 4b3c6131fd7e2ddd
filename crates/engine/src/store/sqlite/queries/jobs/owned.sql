-- The owner's job by id.
SELECT {job_columns}
FROM jobs WHERE id = ?1 AND owner_id = ?2
