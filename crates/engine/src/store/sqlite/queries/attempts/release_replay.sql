-- A keyed replay of attempt ?1 has its answer: a person may decide again.
UPDATE attempts SET lease_expires_at = NULL WHERE id = ?1 AND state = 'unknown'
