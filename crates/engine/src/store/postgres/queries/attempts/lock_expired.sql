-- Locks the jobs of in-flight attempts whose lease has run out by the database's clock,
-- passing over jobs another transaction holds (a host at work on them, or frozen inside a
-- transaction: they are looked at again on the next pass). Rows: the locked jobs' ids.
SELECT j.id::text FROM jobs j
WHERE j.id IN (SELECT a.job_id FROM attempts a
               WHERE a.state = 'in_flight' AND a.lease_expires_at < now())
ORDER BY j.id
FOR NO KEY UPDATE SKIP LOCKED
