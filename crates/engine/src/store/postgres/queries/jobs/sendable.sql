-- Ids of queued jobs whose backoff has passed by the database's clock, oldest first; $1 how many.
SELECT id::text FROM jobs WHERE status = 'queued' AND (not_before IS NULL OR not_before <= now())
ORDER BY id LIMIT $1
