-- Sets budget ?1 (owner ?2 or NULL, provider ?3 or NULL, currency ?4, limit ?5 in billionths,
-- period ?6), replacing one of the same name.
INSERT INTO budgets (name, owner_id, provider, currency, limit_nanos, period, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (name) DO UPDATE SET owner_id = excluded.owner_id, provider = excluded.provider,
    currency = excluded.currency, limit_nanos = excluded.limit_nanos, period = excluded.period,
    updated_at = excluded.updated_at
