-- Extends the lease to $1 milliseconds from the moment it is written (clock_timestamp(), by the
-- database's clock), while executor $3 still holds attempt $2 in flight.
UPDATE attempts
SET lease_expires_at = date_trunc('milliseconds', clock_timestamp()) + $1 * interval '1 millisecond'
WHERE id = onejob_uuid($2) AND state = 'in_flight' AND executor_id = $3
