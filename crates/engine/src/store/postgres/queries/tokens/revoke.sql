-- Revokes token $1, keeping the time of an earlier revocation; returns it as it now stands.
-- An id that is not a UUID matches nothing.
UPDATE tokens SET revoked_at = coalesce(revoked_at, onejob_now())
WHERE id = onejob_uuid($1)
RETURNING id::text AS id, owner_id, name, onejob_time(created_at) AS created_at,
          onejob_time(last_used_at) AS last_used_at, onejob_time(revoked_at) AS revoked_at
