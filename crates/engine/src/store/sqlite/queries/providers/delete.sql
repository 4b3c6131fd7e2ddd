-- Removes a provider.
DELETE FROM providers WHERE name = ?1
