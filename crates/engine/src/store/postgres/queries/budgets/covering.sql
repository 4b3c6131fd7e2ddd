-- The budgets that cover attempt $1, charged in currency $2: of that currency, at its provider
-- or every provider, for its job's owner or every owner; by name, with the milliseconds until
-- each one's next period (UTC). Each budget's row is taken FOR UPDATE, in name order: another
-- host sending under it waits here for this transaction's end, and then counts what it sent.
SELECT b.name AS name, b.limit_nanos AS limit_nanos,
       (extract(epoch FROM (CASE b.period
                                WHEN 'day' THEN date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day'
                                ELSE date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month'
                            END) - (now() AT TIME ZONE 'UTC')) * 1000)::bigint + 1 AS next_in_ms
FROM attempts a JOIN jobs j ON j.id = a.job_id
JOIN budgets b ON b.currency = $2
              AND (b.provider IS NULL OR b.provider = a.provider)
              AND (b.owner_id IS NULL OR b.owner_id = j.owner_id)
WHERE a.id = onejob_uuid($1)
ORDER BY b.name
FOR UPDATE OF b
