-- Spend (SPEC §17): attempts charged at a price, summed exactly in billionths, by $1 (`day` the
-- day each was sent, UTC; `provider`; `owner`) and currency. Spent: every sent attempt that
-- ended, at its settled cost or else its worst case, but a failure whose kind is among $5 (a JSON
-- array: those that prove nothing was sent, or refused before any effect) and one still open. At risk:
-- `unknown` attempts at their worst case. The rule is `money::charged`'s.
-- $2 only this owner's jobs (NULL: every owner's), $3 only attempts sent at or after this time,
-- $4 only this currency (NULL: each).
SELECT CASE $1::text WHEN 'day' THEN to_char(a.sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')
                     WHEN 'provider' THEN a.provider
                     ELSE j.owner_id END AS key,
       a.currency AS currency,
       sum(CASE WHEN a.state IN ('pending', 'in_flight', 'unknown') THEN 0
                WHEN a.state = 'failed' AND a.error_kind IN (SELECT json_array_elements_text($5::json)) THEN 0
                ELSE coalesce(a.cost_nanos, a.worst_nanos) END)::bigint AS spent,
       sum(CASE WHEN a.state = 'unknown' THEN a.worst_nanos ELSE 0 END)::bigint AS at_risk
FROM attempts a JOIN jobs j ON j.id = a.job_id
WHERE a.currency IS NOT NULL
  AND ($2::text IS NULL OR j.owner_id = $2)
  AND ($3::timestamptz IS NULL OR a.sent_at >= $3::timestamptz)
  AND ($4::text IS NULL OR a.currency = $4)
GROUP BY 1, 2
ORDER BY 1, 2
