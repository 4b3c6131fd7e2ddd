-- What executor ?2 sent for attempt ?1, as the request leaves: method ?3, URL ?4 (no query),
-- headers ?5 (JSON, secrets left out), the body's size ?6, SHA-256 ?7 and text ?8, and whether
-- the provider honours Idempotency-Key ?9. An attempt is sent once; a record already there stays.
INSERT INTO attempt_evidence (attempt_id, executor_id, recorded_at, method, url, request_headers,
                              body_bytes, body_sha256, body, keyed)
VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?3, ?4, ?5, ?6, ?7, ?8, ?9)
ON CONFLICT (attempt_id) DO NOTHING
