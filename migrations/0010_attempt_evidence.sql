-- What is known of an attempt (SPEC §16): what its executor sent, recorded as the request left,
-- and what came back, recorded when the exchange ended without a trustworthy answer. Nothing
-- secret is kept: headers are filtered before they are written (no Authorization, no header
-- that carries a key, a token or a cookie), the URL has no query string, and the body is the
-- request's JSON, which holds no key.
CREATE TABLE attempt_evidence (
    attempt_id        TEXT PRIMARY KEY REFERENCES attempts (id),
    executor_id       TEXT NOT NULL,
    recorded_at       TEXT NOT NULL,
    method            TEXT NOT NULL,
    url               TEXT NOT NULL,                       -- without its query string or fragment
    request_headers   TEXT NOT NULL,                       -- JSON object, name → value, secrets left out
    body_bytes        INTEGER NOT NULL,
    body_sha256       TEXT NOT NULL,                       -- hex SHA-256 of the exact bytes sent
    body              TEXT NOT NULL,                       -- the body sent, as text
    keyed             INTEGER NOT NULL CHECK (keyed IN (0, 1)), -- the provider honoured Idempotency-Key
    watched           INTEGER NOT NULL DEFAULT 0 CHECK (watched IN (0, 1)), -- the sender recorded how it ended
    rule              TEXT,                                -- the SPEC §6 rule that made it unknown
    response_status   INTEGER,
    response_headers  TEXT,                                -- JSON object, secrets left out
    response_bytes    INTEGER
);
