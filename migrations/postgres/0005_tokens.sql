-- API tokens of the HTTP API (SPEC §15), as in the SQLite ledger's 0007: each names one
-- owner. The ledger keeps only the token's SHA-256, never the token, so a copy of the ledger
-- lets no one in.
CREATE TABLE tokens (
    id            uuid PRIMARY KEY,              -- UUIDv7: its order is creation order
    owner_id      text NOT NULL,
    name          text,                          -- a person's label, optional
    sha256        text NOT NULL UNIQUE,          -- hex SHA-256 of the token
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,                   -- recorded at most about once a minute
    revoked_at    timestamptz                    -- set once; a revoked token never works again
);
