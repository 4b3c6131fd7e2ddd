-- Marks operation ?1 done once none of its jobs is left; one row affected when this call did.
UPDATE bulk_operations SET state = 'done', finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1 AND state = 'running'
  AND NOT EXISTS (SELECT 1 FROM bulk_items WHERE operation_id = ?1 AND outcome IS NULL)
