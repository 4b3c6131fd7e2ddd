-- Sets a job's backoff to end $1 milliseconds from now by the database's clock, or clears it
-- ($1 NULL). $2 id.
UPDATE jobs SET not_before = onejob_now() + $1 * interval '1 millisecond'
WHERE id = onejob_uuid($2)
