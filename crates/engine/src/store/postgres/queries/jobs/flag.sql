-- Marks a job for a person's review.
UPDATE jobs SET flagged_for_review = true, updated_at = onejob_now() WHERE id = onejob_uuid($1)
