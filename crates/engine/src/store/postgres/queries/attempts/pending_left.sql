-- pending.sql for a pass, less the attempts an executor claimed in the last 2 s: those are
-- their claimer's to send; one left longer was left by a host that stopped. An attempt a person
-- started (a retry) is anyone's to send at once. $1 how many.
SELECT {a.attempt_columns}
FROM attempts a JOIN jobs j ON j.id = a.job_id
WHERE a.state = 'pending' AND j.status = 'running'
  AND (a.created_at < now() - interval '2 seconds'
       OR NOT EXISTS (SELECT 1 FROM job_events e
                      WHERE e.job_id = a.job_id AND e.attempt_id = a.id
                        AND e.kind = 'attempt_created' AND e.actor = 'executor'))
ORDER BY a.id LIMIT $1
