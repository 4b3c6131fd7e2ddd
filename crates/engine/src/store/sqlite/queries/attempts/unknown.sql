-- Up to ?1 attempts in unknown, oldest first, for reconciliation: only those whose request can
-- no longer be answered, its provider's hard deadline passed since it was sent, by the
-- database's clock (SPEC §6: a provider still at work would say it never saw it).
SELECT {a.attempt_columns}
FROM attempts a JOIN providers p ON p.name = a.provider
WHERE a.state = 'unknown'
  AND (julianday('now') - julianday(coalesce(a.sent_at, a.created_at))) * 86400000.0
      >= json_extract(p.config, '$.hard_timeout_ms')
ORDER BY a.id LIMIT ?1
