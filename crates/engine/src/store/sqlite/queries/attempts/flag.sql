-- Flags an attempt for review without moving it.
UPDATE attempts SET flagged_for_review = 1 WHERE id = ?1
