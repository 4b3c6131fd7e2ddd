-- Up to ?1 attempts in unknown, oldest first, for reconciliation: only those whose request can
-- no longer be answered, its provider's hard deadline passed since it was sent, by the
-- database's clock (SPEC §6: a provider still at work would say it never saw it).
SELECT a.id, a.job_id, a.number, a.provider, a.state, a.job_version, a.request_id,
       a.http_status, a.error_kind, a.error_message, a.executor_id, a.lease_expires_at,
       a.flagged_for_review, a.created_at, a.sent_at, a.finished_at, a.usage
FROM attempts a JOIN providers p ON p.name = a.provider
WHERE a.state = 'unknown'
  AND (julianday('now') - julianday(coalesce(a.sent_at, a.created_at))) * 86400000.0
      >= json_extract(p.config, '$.hard_timeout_ms')
ORDER BY a.id LIMIT ?1
