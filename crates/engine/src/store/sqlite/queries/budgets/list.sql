-- The budgets of owner ?1 (NULL: every budget), by name.
SELECT name, owner_id, provider, currency, limit_nanos, period, created_at, updated_at
FROM budgets WHERE ?1 IS NULL OR owner_id = ?1 ORDER BY name
