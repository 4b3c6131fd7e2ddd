-- Locks jobs $1 and the jobs of attempts $2 (text ids; one that names nothing is passed over)
-- until the transaction ends, in id order: every write transaction takes the locks of the
-- jobs it concerns first, in this one statement, so two transactions never wait for each other
-- in a circle. FOR NO KEY UPDATE is the lock an UPDATE of the job takes: it conflicts with
-- another writer's and leaves the foreign-key checks of new events and attempts alone.
-- One list of ids, each job then found by its key: two lists joined by OR would read the
-- whole table on every write.
SELECT id::text FROM jobs
WHERE id IN (SELECT onejob_uuid(t) FROM unnest($1::text[]) AS t
             UNION ALL
             SELECT a.job_id FROM attempts a
             WHERE a.id IN (SELECT onejob_uuid(t) FROM unnest($2::text[]) AS t))
ORDER BY id
FOR NO KEY UPDATE
