-- Until when a keyed replay holds unknown attempt ?1: no row when none does.
SELECT lease_expires_at FROM attempts
WHERE id = ?1 AND state = 'unknown'
  AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
