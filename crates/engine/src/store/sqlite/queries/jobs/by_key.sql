-- The owner's job holding the key.
SELECT {job_columns}
FROM jobs WHERE owner_id = ?1 AND idempotency_key = ?2
