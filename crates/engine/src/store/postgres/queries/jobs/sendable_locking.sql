-- Ids of queued jobs whose backoff has passed, oldest first, locked until the claiming
-- transaction ends, passing over those another host is claiming; $1 how many.
SELECT id::text FROM jobs WHERE status = 'queued' AND (not_before IS NULL OR not_before <= now())
ORDER BY id LIMIT $1
FOR NO KEY UPDATE SKIP LOCKED
