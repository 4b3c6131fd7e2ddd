-- Extends the lease to ?1 milliseconds from now, while executor ?3 still holds attempt ?2 in flight.
UPDATE attempts
SET lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (?1 / 1000.0) || ' seconds')
WHERE id = ?2 AND state = 'in_flight' AND executor_id = ?3
