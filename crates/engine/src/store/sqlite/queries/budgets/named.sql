-- Budget ?1, whoever owns it.
SELECT name, owner_id, provider, currency, limit_nanos, period, created_at, updated_at
FROM budgets WHERE name = ?1
