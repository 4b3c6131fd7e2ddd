-- Attempt ?1's replay window, in milliseconds by the database's clock: how long until its hard
-- deadline has passed since it was sent (0 once it has), and how long its provider still keeps
-- its key, less the margin (?2 of the retention, at least ?3 ms): negative once that has run
-- out, NULL when the provider states no retention. The key is the job's, so the retention is
-- counted from its first use at that provider: the earliest send of any of the job's attempts
-- there (a retry may have been sent under it hours after the first). No row when the attempt
-- or its provider is gone.
SELECT CASE WHEN hard_ms - elapsed_ms <= 0 THEN 0
            ELSE CAST(hard_ms - elapsed_ms AS INTEGER) + 1 END AS wait_ms,
       CAST(kept_ms - max(kept_ms * ?2, ?3) - kept_for_ms AS INTEGER) AS left_ms
FROM (SELECT json_extract(p.config, '$.hard_timeout_ms') AS hard_ms,
             json_extract(p.config, '$.key_retention_s') * 1000.0 AS kept_ms,
             (julianday('now') - julianday(coalesce(a.sent_at, a.created_at))) * 86400000.0
             AS elapsed_ms,
             (julianday('now') - julianday(coalesce(
                 (SELECT min(b.sent_at) FROM attempts b
                  WHERE b.job_id = a.job_id AND b.provider = a.provider),
                 a.sent_at, a.created_at))) * 86400000.0
             AS kept_for_ms
      FROM attempts a JOIN providers p ON p.name = a.provider
      WHERE a.id = ?1)
