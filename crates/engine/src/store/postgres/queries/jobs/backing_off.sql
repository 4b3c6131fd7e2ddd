-- Whether the job waits on a backoff that has not ended, by the database's clock.
SELECT coalesce((SELECT not_before > now() FROM jobs WHERE id = onejob_uuid($1)), false)
