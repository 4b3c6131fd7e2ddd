-- An AI provider's answer metadata for attempt $3: the answer's own id $1 as the request id
-- when the headers carried none, and its token usage $2 (JSON text).
UPDATE attempts SET request_id = coalesce(request_id, $1), usage = coalesce($2::json, usage)
WHERE id = onejob_uuid($3)
