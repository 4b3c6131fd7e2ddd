-- Up to ?3 jobs of operation ?1 not yet decided, in id order after ?2 (the keyset).
SELECT job_id FROM bulk_items
WHERE operation_id = ?1 AND outcome IS NULL AND job_id > ?2
ORDER BY job_id LIMIT ?3
