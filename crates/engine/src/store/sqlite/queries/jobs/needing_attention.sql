-- How many of the owner's jobs need a person.
SELECT count(*) FROM jobs WHERE owner_id = ?1 AND (status = 'unknown' OR flagged_for_review = 1)
