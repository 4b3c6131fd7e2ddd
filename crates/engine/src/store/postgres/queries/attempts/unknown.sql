-- Up to $1 attempts in unknown, oldest first, for reconciliation: only those whose request can
-- no longer be answered, its provider's hard deadline passed since it was sent, by the
-- database's clock (SPEC §6: a provider still at work would say it never saw it).
SELECT a.id::text AS id, a.job_id::text AS job_id, a.number, a.provider, a.state, a.job_version,
       a.request_id, a.http_status, a.error_kind, a.error_message, a.executor_id,
       onejob_time(a.lease_expires_at) AS lease_expires_at, a.flagged_for_review,
       onejob_time(a.created_at) AS created_at, onejob_time(a.sent_at) AS sent_at,
       onejob_time(a.finished_at) AS finished_at, a.usage::text AS usage
FROM attempts a JOIN providers p ON p.name = a.provider
WHERE a.state = 'unknown'
  AND coalesce(a.sent_at, a.created_at)
      + (p.config->>'hard_timeout_ms')::bigint * interval '1 millisecond' <= now()
ORDER BY a.id LIMIT $1
