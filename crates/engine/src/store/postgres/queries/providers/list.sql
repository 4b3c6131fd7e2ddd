-- All providers, by name.
SELECT name, config::text AS config, onejob_time(created_at) AS created_at,
       onejob_time(updated_at) AS updated_at
FROM providers ORDER BY name
