-- Output contracts and their checks against providers (SPEC §7, §8).
-- A check counts for automatic failover only while the contract's hash and the provider's
-- updated_at are the ones it was made against.

CREATE TABLE contracts (
    name        TEXT PRIMARY KEY NOT NULL,
    schema      TEXT NOT NULL CHECK (json_valid(schema)),
    template    TEXT NOT NULL CHECK (json_valid(template)),
    samples     TEXT NOT NULL CHECK (json_valid(samples)),
    hash        TEXT NOT NULL,                -- hex SHA-256 of the canonical JSON of schema, template and samples
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL                 -- changes only when the hash does
);

CREATE TABLE contract_checks (
    id                   TEXT PRIMARY KEY NOT NULL,   -- UUIDv7: its text order is check order
    contract             TEXT NOT NULL,
    contract_hash        TEXT NOT NULL,
    provider             TEXT NOT NULL,
    provider_updated_at  TEXT NOT NULL,
    passed               INTEGER NOT NULL CHECK (passed IN (0, 1)),
    samples              TEXT NOT NULL CHECK (json_valid(samples)),
    checked_at           TEXT NOT NULL
);

CREATE INDEX contract_checks_latest ON contract_checks (contract, provider, id);

-- Token usage and other metadata of an AI provider's answer, kept beside the attempt.
ALTER TABLE attempts ADD COLUMN usage TEXT CHECK (usage IS NULL OR json_valid(usage));

-- A job may name only a configured contract, checked in the submit's one statement.
CREATE TRIGGER jobs_contract_must_exist BEFORE INSERT ON jobs
WHEN json_extract(NEW.intent, '$.contract') IS NOT NULL
 AND json_extract(NEW.intent, '$.contract') NOT IN (SELECT name FROM contracts)
BEGIN
    SELECT RAISE(ABORT, 'intent.contract names a contract that is not configured');
END;
