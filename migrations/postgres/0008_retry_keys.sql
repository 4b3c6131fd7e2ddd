-- A person's or a client's retry under an idempotency key (SPEC §15), as in the SQLite ledger's
-- 0008: the same key again answers the first retry's attempt and starts nothing. The key is the
-- owner's, beside the keys of their jobs but apart from them; it lives as long as its job.
CREATE TABLE retry_keys (
    owner_id         text NOT NULL,
    idempotency_key  text NOT NULL,
    fingerprint      text NOT NULL,                      -- hex SHA-256 of the canonical JSON of the retry
    job_id           uuid NOT NULL REFERENCES jobs (id),
    attempt_id       uuid NOT NULL REFERENCES attempts (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, idempotency_key)
);
