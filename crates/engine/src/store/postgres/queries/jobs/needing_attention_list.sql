-- Up to $2 of the owner's jobs that need a person, most recently updated first; the partial
-- index holds only those few.
SELECT {job_columns}
FROM jobs
WHERE owner_id = $1 AND (status = 'unknown' OR flagged_for_review)
ORDER BY jobs.updated_at DESC, jobs.id DESC LIMIT $2
