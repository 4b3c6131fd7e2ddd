-- Up to ?2 of the owner's jobs that need a person, most recently updated first; the partial
-- index holds only those few.
SELECT {job_columns}
FROM jobs INDEXED BY jobs_needing_attention
WHERE owner_id = ?1 AND (status = 'unknown' OR flagged_for_review = 1)
ORDER BY updated_at DESC, id DESC LIMIT ?2
