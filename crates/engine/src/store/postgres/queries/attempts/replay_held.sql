-- Until when a keyed replay holds unknown attempt $1: no row when none does.
SELECT onejob_time(lease_expires_at) FROM attempts
WHERE id = onejob_uuid($1) AND state = 'unknown' AND lease_expires_at > clock_timestamp()
