-- An attempt by id if its job belongs to owner $2.
SELECT {a.attempt_columns}
FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE a.id = onejob_uuid($1) AND j.owner_id = $2
