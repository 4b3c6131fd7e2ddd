-- An AI provider's answer metadata for attempt $3: the answer's own id $1 as the request id
-- when the headers carried none, its token usage $2 (JSON text), and $4 what that usage cost at
-- the attempt's price, in billionths (SPEC §17).
UPDATE attempts SET request_id = coalesce(request_id, $1), usage = coalesce($2::json, usage),
    cost_nanos = coalesce($4, cost_nanos)
WHERE id = onejob_uuid($3)
