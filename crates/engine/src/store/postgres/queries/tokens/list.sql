-- Every token, oldest first; never its hash.
SELECT id::text AS id, owner_id, name, onejob_time(created_at) AS created_at,
       onejob_time(last_used_at) AS last_used_at, onejob_time(revoked_at) AS revoked_at
FROM tokens ORDER BY id
