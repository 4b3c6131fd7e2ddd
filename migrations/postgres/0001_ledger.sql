-- The ledger on PostgreSQL (SPEC §14): the same tables, rules and guarantees as the SQLite
-- ledger's migrations 0001–0003, numbered on their own. Times are `timestamptz` stamped by the
-- database's clock (`now()` is the transaction's start), never a host's, so hosts with skewed
-- clocks agree. JSON is `json`, kept byte for byte as given (a result never changes, not
-- even its key order).

CREATE TABLE providers (
    name        text PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('openai', 'anthropic', 'http', 'sandbox')),
    config      json NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE contracts (
    name        text PRIMARY KEY,
    schema      json NOT NULL,
    template    json NOT NULL,
    samples     json NOT NULL,
    hash        text NOT NULL,               -- hex SHA-256 of the canonical JSON of schema, template and samples
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()  -- changes only when the hash does
);

CREATE TABLE contract_checks (
    id                   uuid PRIMARY KEY,    -- UUIDv7: its order is check order
    contract             text NOT NULL,
    contract_hash        text NOT NULL,
    provider             text NOT NULL,
    provider_updated_at  timestamptz NOT NULL,
    passed               boolean NOT NULL,
    samples              json NOT NULL,
    checked_at           timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX contract_checks_latest ON contract_checks (contract, provider, id);

CREATE TABLE jobs (
    id                  uuid PRIMARY KEY,     -- UUIDv7: its order is creation order
    owner_id            text NOT NULL,
    idempotency_key     text NOT NULL,
    fingerprint         text NOT NULL,
    intent              json NOT NULL,
    status              text NOT NULL CHECK (status IN ('queued', 'running', 'unknown', 'succeeded', 'failed', 'cancelled')),
    version             integer NOT NULL DEFAULT 0 CHECK (version >= 0),
    completed_by        uuid,                 -- the winning attempt, set once by the compare-and-swap
    result              json,
    error               json,
    flagged_for_review  boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz,
    not_before          timestamptz,          -- a queued job's backoff: no attempt before this time
    -- The only arbiter of "one job per intent".
    CONSTRAINT jobs_one_per_key UNIQUE (owner_id, idempotency_key),
    CHECK ((status = 'succeeded') = (completed_by IS NOT NULL))
);

CREATE INDEX jobs_by_owner ON jobs (owner_id, id);
CREATE INDEX jobs_by_owner_status ON jobs (owner_id, status, id);
CREATE INDEX jobs_needing_attention ON jobs (owner_id) WHERE status = 'unknown' OR flagged_for_review;
CREATE INDEX jobs_queued ON jobs (id) WHERE status = 'queued';
CREATE INDEX jobs_open ON jobs (status) WHERE status IN ('queued', 'running', 'unknown');
CREATE INDEX jobs_open_by_contract ON jobs ((intent ->> 'contract'))
    WHERE status IN ('queued', 'running', 'unknown');

CREATE TABLE attempts (
    id                  uuid PRIMARY KEY,
    job_id              uuid NOT NULL REFERENCES jobs (id),
    number              integer NOT NULL CHECK (number >= 1),
    provider            text NOT NULL,
    state               text NOT NULL CHECK (state IN ('pending', 'in_flight', 'unknown', 'succeeded', 'lost', 'failed', 'abandoned')),
    job_version         integer NOT NULL,
    request_id          text,
    http_status         integer,
    error_kind          text,
    error_message       text,
    executor_id         text,
    lease_expires_at    timestamptz,          -- compared with the database's now(), never a host's
    flagged_for_review  boolean NOT NULL DEFAULT false,
    usage               json,
    created_at          timestamptz NOT NULL DEFAULT now(),
    sent_at             timestamptz,
    finished_at         timestamptz,
    CONSTRAINT attempts_number_per_job UNIQUE (job_id, number)
);

-- At most one open attempt per job: the database, not application code, refuses a second.
CREATE UNIQUE INDEX attempts_one_open_per_job ON attempts (job_id)
    WHERE state IN ('pending', 'in_flight', 'unknown');
CREATE INDEX attempts_in_flight_by_lease ON attempts (lease_expires_at) WHERE state = 'in_flight';
CREATE INDEX attempts_pending ON attempts (id) WHERE state = 'pending';
CREATE INDEX attempts_unknown ON attempts (id) WHERE state = 'unknown';

CREATE TABLE job_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- append order within one job
    job_id      uuid NOT NULL REFERENCES jobs (id),
    attempt_id  uuid REFERENCES attempts (id),
    at          timestamptz NOT NULL DEFAULT now(),
    kind        text NOT NULL,
    actor       text NOT NULL CHECK (actor IN ('user', 'executor', 'provider', 'system')),
    detail      json NOT NULL DEFAULT '{}'
);

CREATE INDEX job_events_by_job ON job_events (job_id, id);

-- Every provider a job's route names (in_route) or that one of its attempts ran at: Find's
-- provider filter and what removing a provider touches. Kept by triggers, so the rows commit
-- with the job or the attempt that names the provider.
CREATE TABLE job_providers (
    provider  text NOT NULL,
    owner_id  text NOT NULL,
    job_id    uuid NOT NULL REFERENCES jobs (id),
    in_route  boolean NOT NULL,
    PRIMARY KEY (provider, owner_id, job_id)
);

-- A submit is one INSERT statement: the route and contract checks, the job, its first event
-- and its providers commit together.
CREATE FUNCTION jobs_check_names() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM json_array_elements_text(NEW.intent -> 'route') AS r (name)
               WHERE r.name NOT IN (SELECT name FROM providers)) THEN
        RAISE EXCEPTION 'intent.route names a provider that is not configured'
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.intent ->> 'contract' IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM contracts WHERE name = NEW.intent ->> 'contract') THEN
        RAISE EXCEPTION 'intent.contract names a contract that is not configured'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER jobs_names_must_exist BEFORE INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_check_names();

CREATE FUNCTION jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    VALUES (NEW.id, NULL, NEW.created_at, 'submitted', 'user',
            json_build_object('idempotency_key', NEW.idempotency_key, 'fingerprint', NEW.fingerprint));
    INSERT INTO job_providers (provider, owner_id, job_id, in_route)
    SELECT r.name, NEW.owner_id, NEW.id, true
      FROM json_array_elements_text(NEW.intent -> 'route') AS r (name)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_submitted AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_after_insert();

CREATE FUNCTION attempts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_providers (provider, owner_id, job_id, in_route)
    SELECT NEW.provider, owner_id, id, false FROM jobs WHERE id = NEW.job_id
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER attempts_name_providers AFTER INSERT ON attempts
    FOR EACH ROW EXECUTE FUNCTION attempts_after_insert();

-- History is append-only: no update, no delete, no truncate, whoever asks.
CREATE FUNCTION job_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'job_events is append-only' USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER job_events_no_update_or_delete BEFORE UPDATE OR DELETE ON job_events
    FOR EACH ROW EXECUTE FUNCTION job_events_append_only();
CREATE TRIGGER job_events_no_truncate BEFORE TRUNCATE ON job_events
    FOR EACH STATEMENT EXECUTE FUNCTION job_events_append_only();

-- A new ledger can be used at once: the built-in sandbox provider runs in-process on loopback.
INSERT INTO providers (name, kind, config)
VALUES ('sandbox', 'sandbox',
        json_build_object('name', 'sandbox', 'kind', 'sandbox', 'soft_timeout_ms', 2000,
                          'hard_timeout_ms', 10000, 'honours_idempotency_key', true));
