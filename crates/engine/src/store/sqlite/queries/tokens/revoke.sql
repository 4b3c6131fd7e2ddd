-- Revokes token ?1, keeping the time of an earlier revocation; returns it as it now stands.
UPDATE tokens SET revoked_at = coalesce(revoked_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
WHERE id = ?1
RETURNING id, owner_id, name, created_at, last_used_at, revoked_at
