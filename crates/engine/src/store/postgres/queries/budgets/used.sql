-- What budget $1 holds in its period now (UTC day or month), in billionths: the totals the
-- ledger keeps per day (`charged_days`, migration 0014) of the attempts it covers, sent since
-- the period began. A day holds in flight and `unknown` attempts at their worst case and ended
-- ones at what they spent (`money::charged`). Run after the budget's row is taken, it sees
-- every other host's committed sends under it.
SELECT coalesce(sum(c.held_nanos), 0)::bigint AS used
FROM budgets b
JOIN charged_days c ON c.currency = b.currency
                   AND (b.provider IS NULL OR c.provider = b.provider)
                   AND (b.owner_id IS NULL OR c.owner_id = b.owner_id)
WHERE b.name = $1
  AND c.day >= CASE b.period
                   WHEN 'day' THEN (now() AT TIME ZONE 'UTC')::date
                   ELSE date_trunc('month', now() AT TIME ZONE 'UTC')::date
               END
