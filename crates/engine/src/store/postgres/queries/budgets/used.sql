-- What budget $1 holds in its period now (UTC day or month), in billionths: attempts it covers
-- sent since the period began, in flight or `unknown` at their worst case, ended at what they
-- spent (`money::charged`: nothing for a failure whose kind is among $2, a JSON array). Run after the
-- budget's row is taken, it sees every other host's committed sends under it.
SELECT coalesce(sum(CASE WHEN a.state IN ('in_flight', 'unknown') THEN a.worst_nanos
                         WHEN a.state = 'pending' THEN 0
                         WHEN a.state = 'failed' AND a.error_kind IN (SELECT json_array_elements_text($2::json)) THEN 0
                         ELSE coalesce(a.cost_nanos, a.worst_nanos) END), 0)::bigint AS used
FROM budgets b
JOIN attempts a ON a.currency = b.currency
WHERE b.name = $1
  AND (b.provider IS NULL OR a.provider = b.provider)
  AND (b.owner_id IS NULL
       OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = a.job_id AND j.owner_id = b.owner_id))
  AND a.sent_at >= CASE b.period
                       WHEN 'day' THEN date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                       ELSE date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                   END
