-- Locks job $1 until the transaction ends unless another transaction holds it: a claim passes
-- over a job another host is writing (FOR UPDATE SKIP LOCKED) instead of waiting for it.
-- Row: the job's id when it was locked; none when another holds it or it does not exist.
SELECT id::text FROM jobs WHERE id = onejob_uuid($1) FOR NO KEY UPDATE SKIP LOCKED
