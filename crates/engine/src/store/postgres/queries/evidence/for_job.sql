-- The evidence recorded for job $1's attempts (the body left out), by attempt number.
SELECT e.attempt_id::text AS attempt_id, e.executor_id, e.method, e.url,
       e.request_headers::text AS request_headers, e.body_bytes, e.body_sha256,
       CASE WHEN e.keyed THEN 1 ELSE 0 END::bigint AS keyed,
       CASE WHEN e.watched THEN 1 ELSE 0 END::bigint AS watched, e.rule,
       e.response_status::bigint AS response_status,
       e.response_headers::text AS response_headers, e.response_bytes
FROM attempt_evidence e JOIN attempts a ON a.id = e.attempt_id
WHERE a.job_id = onejob_uuid($1)
ORDER BY a.number
