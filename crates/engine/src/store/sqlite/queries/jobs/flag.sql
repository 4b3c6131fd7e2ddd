-- Marks a job for a person's review.
UPDATE jobs SET flagged_for_review = 1, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1
