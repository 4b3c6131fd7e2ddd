-- One provider by name.
SELECT name, config, created_at, updated_at FROM providers WHERE name = ?1
