-- Every token, oldest first; never its hash.
SELECT id, owner_id, name, created_at, last_used_at, revoked_at FROM tokens ORDER BY id
