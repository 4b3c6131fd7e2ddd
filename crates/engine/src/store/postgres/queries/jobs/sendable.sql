-- Ids of queued jobs whose backoff has passed by the database's clock, oldest first; $1 how many.
SELECT jobs.id::text FROM jobs WHERE status = 'queued' AND (not_before IS NULL OR not_before <= now())
ORDER BY jobs.id LIMIT $1
