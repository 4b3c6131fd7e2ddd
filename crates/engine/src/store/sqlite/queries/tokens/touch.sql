-- Records that token ?1 was used now, unless a use within the last ?2 milliseconds already was.
UPDATE tokens SET last_used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1
  AND (last_used_at IS NULL
       OR last_used_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (?2 / 1000.0) || ' seconds'))
