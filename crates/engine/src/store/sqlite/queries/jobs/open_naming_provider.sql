-- Open jobs of every owner, counted by status, whose route names provider ?1 or whose open
-- attempt is at it. Walks the open jobs, which are few.
SELECT j.status, count(*) FROM jobs j
WHERE j.status IN ('queued', 'running', 'unknown')
  AND (EXISTS (SELECT 1 FROM job_providers p
                WHERE p.provider = ?1 AND p.owner_id = j.owner_id AND p.job_id = j.id
                  AND p.in_route = 1)
       OR EXISTS (SELECT 1 FROM attempts a
                   WHERE a.job_id = j.id AND a.provider = ?1
                     AND a.state IN ('pending', 'in_flight', 'unknown')))
GROUP BY j.status
