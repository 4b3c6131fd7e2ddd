-- The jobs holding the keys of a group: one row per job.
-- $1 the group's JSON array of [id, owner, key, …], as for insert_many.
SELECT {job_columns}
FROM jobs WHERE (owner_id, idempotency_key) IN (SELECT g.e ->> 1, g.e ->> 2 FROM json_array_elements($1::json) AS g (e))
