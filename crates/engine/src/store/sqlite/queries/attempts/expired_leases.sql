-- In-flight attempts whose lease has run out.
SELECT a.id, a.job_id, a.number, a.provider, a.state, a.job_version, a.request_id,
       a.http_status, a.error_kind, a.error_message, a.executor_id, a.lease_expires_at,
       a.flagged_for_review, a.created_at, a.sent_at, a.finished_at, a.usage
FROM attempts a WHERE a.state = 'in_flight' AND a.lease_expires_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ORDER BY a.id
