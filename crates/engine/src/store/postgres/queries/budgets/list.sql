-- The budgets of owner $1 (NULL: every budget), by name.
SELECT name, owner_id, provider, currency, limit_nanos, period,
       onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at
FROM budgets WHERE $1::text IS NULL OR owner_id = $1 ORDER BY name
