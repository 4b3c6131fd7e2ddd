-- A person's action applied to every job a filter matched (SPEC §16 "Many at once"). The
-- operation is keyed like a submit (owner + key); its set of jobs is fixed when it starts, one
-- row per job in bulk_items, each decided once: `outcome` is NULL until then, `changed` when the
-- action took, or the error code it was skipped with (`invalid_transition`, `attempt_blocked`…).
CREATE TABLE bulk_operations (
    id               TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,                      -- hex SHA-256 of the canonical JSON of the request
    action           TEXT NOT NULL CHECK (action IN ('resolve', 'cancel', 'retry')),
    params           TEXT NOT NULL,                      -- the request as JSON: filter, as, provider
    state            TEXT NOT NULL CHECK (state IN ('running', 'done')),
    matched          INTEGER NOT NULL,
    created_at       TEXT NOT NULL,
    finished_at      TEXT,
    UNIQUE (owner_id, idempotency_key)
);

CREATE TABLE bulk_items (
    operation_id  TEXT NOT NULL REFERENCES bulk_operations (id),
    job_id        TEXT NOT NULL REFERENCES jobs (id),
    outcome       TEXT,
    PRIMARY KEY (operation_id, job_id)
) WITHOUT ROWID;

-- What is left of an operation, in job order (the keyset its runs page by).
CREATE INDEX bulk_items_left ON bulk_items (operation_id, job_id) WHERE outcome IS NULL;
