-- All contracts, by name.
SELECT name, schema, template, samples, hash, created_at, updated_at FROM contracts ORDER BY name
