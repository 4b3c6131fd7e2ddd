-- How many milliseconds attempt $1's request may still be answered: until its provider's hard
-- deadline has passed since it was sent, by the database's clock; 0 once it has. No row when
-- the attempt or its provider is gone.
SELECT greatest(0, ceil(extract(epoch FROM
           coalesce(a.sent_at, a.created_at)
           + (p.config->>'hard_timeout_ms')::bigint * interval '1 millisecond'
           - clock_timestamp()) * 1000))::bigint
FROM attempts a JOIN providers p ON p.name = a.provider
WHERE a.id = onejob_uuid($1)
