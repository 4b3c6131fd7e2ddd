-- Records that token $1 was used now, unless a use within the last $2 milliseconds already was.
UPDATE tokens SET last_used_at = onejob_now()
WHERE id = onejob_uuid($1)
  AND (last_used_at IS NULL OR last_used_at < onejob_now() - $2 * interval '1 millisecond')
