-- Flags an attempt for review without moving it.
UPDATE attempts SET flagged_for_review = true WHERE id = onejob_uuid($1)
