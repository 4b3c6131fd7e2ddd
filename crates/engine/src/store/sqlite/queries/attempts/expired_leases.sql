-- In-flight attempts whose lease has run out.
SELECT {a.attempt_columns}
FROM attempts a WHERE a.state = 'in_flight' AND a.lease_expires_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ORDER BY a.id
