-- An attempt's recorded token usage.
SELECT usage::text FROM attempts WHERE id = onejob_uuid($1)
