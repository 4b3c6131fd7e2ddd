-- How attempt $1's exchange ended without a trustworthy answer: the rule $2 that made it unknown
-- (the first one recorded stays), and what came back: status $3, headers $4 (JSON, secrets left
-- out) and body bytes $5, all NULL when nothing did.
UPDATE attempt_evidence
SET watched = true, rule = coalesce(rule, $2), response_status = $3,
    response_headers = $4::jsonb, response_bytes = $5
WHERE attempt_id = onejob_uuid($1)
