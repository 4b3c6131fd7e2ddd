-- When the next queued job's backoff ends, if one waits.
SELECT onejob_time(min(not_before)) FROM jobs WHERE status = 'queued'
