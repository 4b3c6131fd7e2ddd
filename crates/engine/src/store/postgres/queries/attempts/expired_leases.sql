-- In-flight attempts whose lease has run out by the database's clock.
SELECT {a.attempt_columns}
FROM attempts a WHERE a.state = 'in_flight' AND a.lease_expires_at < now() ORDER BY a.id
