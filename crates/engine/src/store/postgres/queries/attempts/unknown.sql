-- Up to $1 attempts in unknown, oldest first, for reconciliation: only those whose request can
-- no longer be answered, its provider's hard deadline passed since it was sent, by the
-- database's clock (SPEC §6: a provider still at work would say it never saw it).
SELECT {a.attempt_columns}
FROM attempts a JOIN providers p ON p.name = a.provider
WHERE a.state = 'unknown'
  AND coalesce(a.sent_at, a.created_at)
      + (p.config->>'hard_timeout_ms')::bigint * interval '1 millisecond' <= now()
ORDER BY a.id LIMIT $1
