-- Up to ?1 attempts in unknown, oldest first, that a keyed replay may send again (SPEC §16):
-- not flagged for review, at a provider that honours Idempotency-Key and states how long it
-- keeps a key, its hard deadline passed since the attempt was sent and that key still kept:
-- its retention less the margin (?2 of it, at least ?3 ms) not yet run out since the key's
-- first use at that provider (the earliest send of any of the job's attempts there). Every
-- time by the database's clock.
SELECT {a.attempt_columns}
FROM attempts a JOIN providers p ON p.name = a.provider
WHERE a.state = 'unknown' AND a.flagged_for_review = 0
  AND json_extract(p.config, '$.honours_idempotency_key') = 1
  AND json_extract(p.config, '$.key_retention_s') > 0
  AND (julianday('now') - julianday(coalesce(a.sent_at, a.created_at))) * 86400000.0
      >= json_extract(p.config, '$.hard_timeout_ms')
  AND (julianday('now') - julianday(coalesce(
          (SELECT min(b.sent_at) FROM attempts b
           WHERE b.job_id = a.job_id AND b.provider = a.provider),
          a.sent_at, a.created_at))) * 86400000.0
      < json_extract(p.config, '$.key_retention_s') * 1000.0
        - max(json_extract(p.config, '$.key_retention_s') * 1000.0 * ?2, ?3)
ORDER BY a.id LIMIT ?1
