-- Up to $3 jobs of operation $1 not yet decided, in id order after $2 (the keyset).
SELECT job_id::text AS job_id FROM bulk_items
WHERE operation_id = $1::uuid AND outcome IS NULL AND job_id > $2::uuid
ORDER BY job_id LIMIT $3
