-- All providers, by name.
SELECT name, config, created_at, updated_at FROM providers ORDER BY name
