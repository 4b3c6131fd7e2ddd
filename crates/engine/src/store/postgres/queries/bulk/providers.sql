-- The providers operation $1's jobs are routed to or ran at (as the Jobs list's provider filter
-- reads a job), by name, at most $2 of them.
SELECT p.name FROM providers p
WHERE EXISTS (
    SELECT 1 FROM bulk_operations o
    JOIN bulk_items b ON b.operation_id = o.id
    JOIN job_providers jp
      ON jp.provider = p.name AND jp.owner_id = o.owner_id AND jp.job_id = b.job_id
    WHERE o.id = $1::uuid
)
ORDER BY p.name LIMIT $2
