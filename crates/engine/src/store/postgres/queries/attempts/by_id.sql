-- An attempt by id, whoever owns its job.
SELECT {a.attempt_columns}
FROM attempts a WHERE a.id = onejob_uuid($1)
