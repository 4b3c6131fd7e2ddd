-- The token whose hex SHA-256 is ?1: its id, owner, whether it is revoked, and whether its
-- last use was recorded longer than ?2 milliseconds ago (or never).
SELECT id, owner_id, revoked_at IS NOT NULL AS revoked,
       (last_used_at IS NULL
        OR last_used_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (?2 / 1000.0) || ' seconds'))
           AS stale
FROM tokens WHERE sha256 = ?1
