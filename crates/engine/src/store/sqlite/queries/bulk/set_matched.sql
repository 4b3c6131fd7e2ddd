-- How many jobs operation ?1 fixed when it started: ?2.
UPDATE bulk_operations SET matched = ?2 WHERE id = ?1
