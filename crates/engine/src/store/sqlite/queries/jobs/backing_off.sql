-- Whether the job waits on a backoff that has not ended.
SELECT coalesce((SELECT not_before > strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM jobs WHERE id = ?1), 0)
