-- Locks jobs $1 and the jobs of attempts $2 (canonical UUIDs; the caller passes over an id that
-- is not one, as it names nothing) until the transaction ends, in id order: every write
-- transaction takes the locks of the jobs it concerns first, in this one statement, so two
-- transactions never wait for each other in a circle. FOR NO KEY UPDATE is the lock an UPDATE
-- of the job takes: it conflicts with another writer's and leaves the foreign-key checks of new
-- events and attempts alone.
-- One array of ids, each job then found by its key: two lists joined by OR would read the whole
-- table on every write. Each array is read through a sub-select, so a plan made for the values
-- given costs what one for any values does: the server then keeps one plan for every run,
-- instead of planning each run anew (which cost several times the statement's own work).
SELECT jobs.id::text FROM jobs
WHERE jobs.id = ANY ((SELECT $1::uuid[])
                     || ARRAY(SELECT a.job_id FROM attempts a
                              WHERE a.id = ANY ((SELECT $2::uuid[])::uuid[])))
ORDER BY jobs.id
FOR NO KEY UPDATE
