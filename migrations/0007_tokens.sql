-- API tokens of the HTTP API (SPEC §15): each names one owner. The ledger keeps only the
-- token's SHA-256, never the token, so a copy of the ledger lets no one in.
CREATE TABLE tokens (
    id            TEXT PRIMARY KEY NOT NULL,     -- UUIDv7: its text order is creation order
    owner_id      TEXT NOT NULL,
    name          TEXT,                          -- a person's label, optional
    sha256        TEXT NOT NULL UNIQUE,          -- hex SHA-256 of the token
    created_at    TEXT NOT NULL,
    last_used_at  TEXT,                          -- recorded at most about once a minute
    revoked_at    TEXT                           -- set once; a revoked token never works again
);
