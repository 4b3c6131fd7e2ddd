-- Decides operation ?1's job ?2 as ?3 (`changed`, or the code it was skipped with), unless it was
-- decided already; one row affected when this call decided it.
UPDATE bulk_items SET outcome = ?3 WHERE operation_id = ?1 AND job_id = ?2 AND outcome IS NULL
