-- Ids of queued jobs whose backoff has passed, oldest first, locked until the claiming
-- transaction ends, passing over those another host is claiming; $1 how many. Ordered by the
-- uuid itself (the index's order, the same as its text's), so the scan stops at $1 rows
-- instead of sorting every queued job; $1 is read through a sub-select, so the server keeps
-- one plan for every run instead of planning each anew.
SELECT jobs.id::text FROM jobs
WHERE status = 'queued' AND (not_before IS NULL OR not_before <= now())
ORDER BY jobs.id LIMIT (SELECT $1::bigint)
FOR NO KEY UPDATE SKIP LOCKED
