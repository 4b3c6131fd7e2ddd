-- The budgets that cover attempt ?1, charged in currency ?2: of that currency, at its provider
-- or every provider, for its job's owner or every owner; by name, with the milliseconds until
-- each one's next period (UTC) and what each holds now (`budget_held`). On SQLite the file's
-- write lock, which the caller holds, keeps every other sender out until it commits.
SELECT b.name AS name, b.limit_nanos AS limit_nanos, u.used AS used,
       CAST((julianday(CASE b.period WHEN 'day' THEN date('now', '+1 day')
                                     ELSE date('now', 'start of month', '+1 month') END)
             - julianday('now')) * 86400000 AS INTEGER) + 1 AS next_in_ms
FROM attempts a JOIN jobs j ON j.id = a.job_id
JOIN budgets b ON b.currency = ?2
              AND (b.provider IS NULL OR b.provider = a.provider)
              AND (b.owner_id IS NULL OR b.owner_id = j.owner_id)
JOIN budget_held u ON u.name = b.name
WHERE a.id = ?1
ORDER BY b.name
