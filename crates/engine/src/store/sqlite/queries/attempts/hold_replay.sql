-- A keyed replay holds unknown attempt ?1 for ?2 milliseconds from now, unless it moved, is
-- flagged, or another replay holds it still: while held, no person says it did not happen.
UPDATE attempts
SET lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (?2 / 1000.0) || ' seconds')
WHERE id = ?1 AND state = 'unknown' AND flagged_for_review = 0
  AND (lease_expires_at IS NULL OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
