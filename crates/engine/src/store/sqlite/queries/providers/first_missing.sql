-- The first of the names in ?1 (a JSON array) that is not a configured provider, with its index.
SELECT key, value FROM json_each(?1) WHERE value NOT IN (SELECT name FROM providers)
ORDER BY key LIMIT 1
