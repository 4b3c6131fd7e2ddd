-- A keyed replay holds unknown attempt $1 for $2 milliseconds from the moment it is written,
-- unless it moved, is flagged, or another replay holds it still: while held, no person says it
-- did not happen.
UPDATE attempts
SET lease_expires_at = date_trunc('milliseconds', clock_timestamp()) + $2 * interval '1 millisecond'
WHERE id = onejob_uuid($1) AND state = 'unknown' AND NOT flagged_for_review
  AND (lease_expires_at IS NULL OR lease_expires_at <= clock_timestamp())
