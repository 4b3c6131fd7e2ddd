-- What is known of an attempt (SPEC §16), as in the SQLite ledger's 0010: what its executor
-- sent, recorded as the request left, and what came back, recorded when the exchange ended
-- without a trustworthy answer. Nothing secret is kept: headers are filtered before they are
-- written, the URL has no query string, and the body is the request's JSON, which holds no key.
CREATE TABLE attempt_evidence (
    attempt_id        uuid PRIMARY KEY REFERENCES attempts (id),
    executor_id       text NOT NULL,
    recorded_at       timestamptz NOT NULL DEFAULT now(),
    method            text NOT NULL,
    url               text NOT NULL,                       -- without its query string or fragment
    request_headers   jsonb NOT NULL,                      -- name → value, secrets left out
    body_bytes        bigint NOT NULL,
    body_sha256       text NOT NULL,                       -- hex SHA-256 of the exact bytes sent
    body              text NOT NULL,                       -- the body sent, as text
    keyed             boolean NOT NULL,                    -- the provider honoured Idempotency-Key
    watched           boolean NOT NULL DEFAULT false,      -- the sender recorded how it ended
    rule              text,                                -- the SPEC §6 rule that made it unknown
    response_status   integer,
    response_headers  jsonb,                               -- secrets left out
    response_bytes    bigint
);
