-- Records operation ?1's job ?2, decided by this run, as skipped with code ?3 after all.
UPDATE bulk_items SET outcome = ?3 WHERE operation_id = ?1 AND job_id = ?2
