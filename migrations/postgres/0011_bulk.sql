-- A person's action applied to every job a filter matched (SPEC §16 "Many at once"), as in the
-- SQLite ledger's 0011. The operation is keyed like a submit (owner + key); its set of jobs is
-- fixed when it starts, one row per job in bulk_items, each decided once: `outcome` is NULL until
-- then, `changed` when the action took, or the error code it was skipped with.
CREATE TABLE bulk_operations (
    id               uuid PRIMARY KEY,
    owner_id         text NOT NULL,
    idempotency_key  text NOT NULL,
    fingerprint      text NOT NULL,                      -- hex SHA-256 of the canonical JSON of the request
    action           text NOT NULL CHECK (action IN ('resolve', 'cancel', 'retry')),
    params           json NOT NULL,                      -- the request: filter, as, provider
    state            text NOT NULL CHECK (state IN ('running', 'done')),
    matched          bigint NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    UNIQUE (owner_id, idempotency_key)
);

CREATE TABLE bulk_items (
    operation_id  uuid NOT NULL REFERENCES bulk_operations (id),
    job_id        uuid NOT NULL REFERENCES jobs (id),
    outcome       text,
    PRIMARY KEY (operation_id, job_id)
);

-- What is left of an operation, in job order (the keyset its runs page by).
CREATE INDEX bulk_items_left ON bulk_items (operation_id, job_id) WHERE outcome IS NULL;
