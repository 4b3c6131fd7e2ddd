-- Ids of queued jobs whose backoff has passed, oldest first; ?1 how many.
SELECT id FROM jobs
WHERE status IN ('queued', 'running', 'unknown') AND status = 'queued'
  AND (not_before IS NULL OR not_before <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ORDER BY id LIMIT ?1
