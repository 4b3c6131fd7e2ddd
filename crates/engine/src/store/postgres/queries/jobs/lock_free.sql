-- jobs/lock.sql for a group of the executor's writes, which never waits for another host: it
-- locks those of jobs $1 and of the jobs of attempts $2 (canonical UUIDs) that no other
-- transaction holds, in id order, passing over the held ones (SKIP LOCKED). A host frozen
-- inside a transaction then holds up only the writes of the job it holds, never this host's
-- other writes (its lease renewals, answers and claims). Rows: each job asked for that exists
-- and is held by another transaction, with the attempt it was asked for by (NULL when asked
-- for by its own id); those writes step aside and are tried again later.
-- Each array is read through a sub-select, as in jobs/lock.sql, so one plan serves every run.
WITH wanted AS MATERIALIZED (
    SELECT j.id AS job_id, NULL::uuid AS attempt_id FROM jobs j
    WHERE j.id = ANY ((SELECT $1::uuid[])::uuid[])
    UNION ALL
    SELECT a.job_id, a.id FROM attempts a WHERE a.id = ANY ((SELECT $2::uuid[])::uuid[])
), locked AS MATERIALIZED (
    SELECT jobs.id FROM jobs WHERE jobs.id IN (SELECT job_id FROM wanted)
    ORDER BY jobs.id
    FOR NO KEY UPDATE SKIP LOCKED
)
SELECT w.job_id::text AS job_id, w.attempt_id::text AS attempt_id FROM wanted w
WHERE w.job_id NOT IN (SELECT id FROM locked)
