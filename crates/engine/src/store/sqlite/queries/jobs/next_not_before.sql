-- When the next queued job's backoff ends, if one waits.
SELECT min(not_before) FROM jobs WHERE status IN ('queued', 'running', 'unknown') AND status = 'queued'
