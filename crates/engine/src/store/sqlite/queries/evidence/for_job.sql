-- The evidence recorded for job ?1's attempts (the body left out), by attempt number.
SELECT e.attempt_id, e.executor_id, e.method, e.url, e.request_headers, e.body_bytes,
       e.body_sha256, e.keyed, e.watched, e.rule, e.response_status, e.response_headers,
       e.response_bytes
FROM attempt_evidence e JOIN attempts a ON a.id = e.attempt_id
WHERE a.job_id = ?1
ORDER BY a.number
