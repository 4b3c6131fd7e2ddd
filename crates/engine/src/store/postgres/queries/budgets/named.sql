-- Budget $1, whoever owns it.
SELECT name, owner_id, provider, currency, limit_nanos, period,
       onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at
FROM budgets WHERE name = $1
