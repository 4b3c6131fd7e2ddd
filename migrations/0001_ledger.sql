-- The ledger: providers, jobs, attempts and their append-only history (SPEC §3, §4, §10).
-- Times are UTC text of one fixed width ("2026-01-02T03:04:05.678Z"), so text order is time order.

CREATE TABLE providers (
    name        TEXT PRIMARY KEY NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('openai', 'anthropic', 'http', 'sandbox')),
    config      TEXT NOT NULL CHECK (json_valid(config)),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE jobs (
    id                  TEXT PRIMARY KEY NOT NULL,   -- UUIDv7: its text order is creation order
    owner_id            TEXT NOT NULL,
    idempotency_key     TEXT NOT NULL,
    fingerprint         TEXT NOT NULL,
    intent              TEXT NOT NULL CHECK (json_valid(intent)),
    status              TEXT NOT NULL CHECK (status IN ('queued', 'running', 'unknown', 'succeeded', 'failed', 'cancelled')),
    version             INTEGER NOT NULL DEFAULT 0 CHECK (version >= 0),
    completed_by        TEXT,                        -- the winning attempt, set once by the compare-and-swap
    result              TEXT CHECK (result IS NULL OR json_valid(result)),
    error               TEXT CHECK (error IS NULL OR json_valid(error)),
    flagged_for_review  INTEGER NOT NULL DEFAULT 0 CHECK (flagged_for_review IN (0, 1)),
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    finished_at         TEXT,
    not_before          TEXT,                        -- a queued job's backoff: no attempt before this time
    -- The only arbiter of "one job per intent".
    UNIQUE (owner_id, idempotency_key),
    CHECK ((status = 'succeeded') = (completed_by IS NOT NULL))
);

CREATE INDEX jobs_by_owner ON jobs (owner_id, id);
CREATE INDEX jobs_by_owner_status ON jobs (owner_id, status, id);
CREATE INDEX jobs_needing_attention ON jobs (owner_id) WHERE status = 'unknown' OR flagged_for_review = 1;
CREATE INDEX jobs_queued ON jobs (id) WHERE status = 'queued';

CREATE TABLE attempts (
    id                  TEXT PRIMARY KEY NOT NULL,
    job_id              TEXT NOT NULL REFERENCES jobs (id),
    number              INTEGER NOT NULL CHECK (number >= 1),
    provider            TEXT NOT NULL,
    state               TEXT NOT NULL CHECK (state IN ('pending', 'in_flight', 'unknown', 'succeeded', 'lost', 'failed', 'abandoned')),
    job_version         INTEGER NOT NULL,
    request_id          TEXT,
    http_status         INTEGER,
    error_kind          TEXT,
    error_message       TEXT,
    executor_id         TEXT,
    lease_expires_at    TEXT,
    flagged_for_review  INTEGER NOT NULL DEFAULT 0 CHECK (flagged_for_review IN (0, 1)),
    created_at          TEXT NOT NULL,
    sent_at             TEXT,
    finished_at         TEXT,
    UNIQUE (job_id, number)
);

-- At most one open attempt per job: the database, not application code, refuses a second.
CREATE UNIQUE INDEX attempts_one_open_per_job ON attempts (job_id)
    WHERE state IN ('pending', 'in_flight', 'unknown');
CREATE INDEX attempts_in_flight_by_lease ON attempts (lease_expires_at) WHERE state = 'in_flight';
CREATE INDEX attempts_pending ON attempts (id) WHERE state = 'pending';
CREATE INDEX attempts_unknown ON attempts (id) WHERE state = 'unknown';

CREATE TABLE job_events (
    id          INTEGER PRIMARY KEY,  -- rowid order is append order: rows are never deleted
    job_id      TEXT NOT NULL REFERENCES jobs (id),
    attempt_id  TEXT REFERENCES attempts (id),
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL,
    actor       TEXT NOT NULL CHECK (actor IN ('user', 'executor', 'provider', 'system')),
    detail      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail))
);

CREATE INDEX job_events_by_job ON job_events (job_id, id);

-- A submit is one INSERT statement: the route check, the job and its first event commit
-- together, in one round trip to the database.
CREATE TRIGGER jobs_route_must_exist BEFORE INSERT ON jobs
WHEN EXISTS (SELECT 1 FROM json_each(NEW.intent, '$.route') WHERE value NOT IN (SELECT name FROM providers))
BEGIN
    SELECT RAISE(ABORT, 'intent.route names a provider that is not configured');
END;

CREATE TRIGGER jobs_submitted_event AFTER INSERT ON jobs
BEGIN
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    VALUES (NEW.id, NULL, NEW.created_at, 'submitted', 'user',
            json_object('idempotency_key', NEW.idempotency_key, 'fingerprint', NEW.fingerprint));
END;

-- History is append-only.
CREATE TRIGGER job_events_no_update BEFORE UPDATE ON job_events
BEGIN
    SELECT RAISE(ABORT, 'job_events is append-only');
END;

CREATE TRIGGER job_events_no_delete BEFORE DELETE ON job_events
BEGIN
    SELECT RAISE(ABORT, 'job_events is append-only');
END;

-- A new ledger can be used at once: the built-in sandbox provider runs in-process on loopback.
INSERT INTO providers (name, kind, config, created_at, updated_at)
VALUES ('sandbox', 'sandbox',
        json_object('name', 'sandbox', 'kind', 'sandbox', 'soft_timeout_ms', 2000,
                    'hard_timeout_ms', 10000, 'honours_idempotency_key', json('true')),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
