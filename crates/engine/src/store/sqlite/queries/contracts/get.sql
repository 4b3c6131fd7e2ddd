-- One contract by name.
SELECT name, schema, template, samples, hash, created_at, updated_at FROM contracts WHERE name = ?1
