-- All contracts, by name.
SELECT name, schema::text AS schema, template::text AS template, samples::text AS samples, hash,
       onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at
FROM contracts ORDER BY name
