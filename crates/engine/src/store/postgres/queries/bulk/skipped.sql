-- Up to $3 of operation $1's skipped jobs with their codes, in id order after $2 (the keyset).
SELECT job_id::text AS job_id, outcome FROM bulk_items
WHERE operation_id = $1::uuid AND outcome IS NOT NULL AND outcome <> 'changed'
  AND job_id > $2::uuid
ORDER BY job_id LIMIT $3
