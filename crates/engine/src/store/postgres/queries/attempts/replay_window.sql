-- Attempt $1's replay window, in milliseconds by the database's clock: how long until its hard
-- deadline has passed since it was sent (0 once it has), and how long its provider still keeps
-- its key, less the margin ($2 of the retention, at least $3 ms): negative once that has run
-- out, NULL when the provider states no retention. No row when the attempt or its provider is
-- gone.
SELECT greatest(0, ceil(extract(epoch FROM
           coalesce(a.sent_at, a.created_at)
           + (p.config->>'hard_timeout_ms')::bigint * interval '1 millisecond'
           - clock_timestamp()) * 1000))::bigint AS wait_ms,
       floor(extract(epoch FROM
           coalesce(a.sent_at, a.created_at)
           + ((p.config->>'key_retention_s')::bigint * 1000.0
              - greatest((p.config->>'key_retention_s')::bigint * 1000.0 * $2::float8, $3::float8))
             * interval '1 millisecond'
           - clock_timestamp()) * 1000)::bigint AS left_ms
FROM attempts a JOIN providers p ON p.name = a.provider
WHERE a.id = onejob_uuid($1)
