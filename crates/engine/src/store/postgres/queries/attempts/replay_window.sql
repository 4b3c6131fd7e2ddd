-- Attempt $1's replay window, in milliseconds by the database's clock: how long until its hard
-- deadline has passed since it was sent (0 once it has), and how long its provider still keeps
-- its key, less the margin ($2 of the retention, at least $3 ms): negative once that has run
-- out, NULL when the provider states no retention. The key is the job's, so the retention is
-- counted from its first use at that provider: the earliest send of any of the job's attempts
-- there (a retry may have been sent under it hours after the first). No row when the attempt
-- or its provider is gone.
SELECT greatest(0, ceil(extract(epoch FROM
           coalesce(a.sent_at, a.created_at)
           + (p.config->>'hard_timeout_ms')::bigint * interval '1 millisecond'
           - clock_timestamp()) * 1000))::bigint AS wait_ms,
       floor(extract(epoch FROM
           coalesce((SELECT min(b.sent_at) FROM attempts b
                     WHERE b.job_id = a.job_id AND b.provider = a.provider),
                    a.sent_at, a.created_at)
           + ((p.config->>'key_retention_s')::bigint * 1000.0
              - greatest((p.config->>'key_retention_s')::bigint * 1000.0 * $2::float8, $3::float8))
             * interval '1 millisecond'
           - clock_timestamp()) * 1000)::bigint AS left_ms
FROM attempts a JOIN providers p ON p.name = a.provider
WHERE a.id = onejob_uuid($1)
