-- Open jobs of every owner, counted by status, whose intent names contract $1.
SELECT status, count(*) FROM jobs
WHERE (intent ->> 'contract') = $1
  AND status IN ('queued', 'running', 'unknown')
GROUP BY status
