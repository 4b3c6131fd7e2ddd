-- A person's or a client's retry under an idempotency key (SPEC §15): the same key again
-- answers the first retry's attempt and starts nothing. The key is the owner's, beside the keys
-- of their jobs but apart from them; it lives as long as its job.
CREATE TABLE retry_keys (
    owner_id         TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,                      -- hex SHA-256 of the canonical JSON of the retry
    job_id           TEXT NOT NULL REFERENCES jobs (id),
    attempt_id       TEXT NOT NULL REFERENCES attempts (id),
    created_at       TEXT NOT NULL,
    PRIMARY KEY (owner_id, idempotency_key)
);
