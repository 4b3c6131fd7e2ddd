-- Find (SPEC §13): jobs by provider, and what removing a provider or a contract affects.

-- Every provider a job's route names (in_route = 1) or that one of its attempts ran at
-- (in_route = 0, e.g. a person's explicit retry elsewhere). Kept by triggers, so the rows
-- commit in the same statement as the job or the attempt that names the provider.
-- Keyed for one owner's jobs at one provider in id order: the Jobs list's keyset pages.
CREATE TABLE job_providers (
    provider  TEXT NOT NULL,
    owner_id  TEXT NOT NULL,
    job_id    TEXT NOT NULL REFERENCES jobs (id),
    in_route  INTEGER NOT NULL CHECK (in_route IN (0, 1)),
    PRIMARY KEY (provider, owner_id, job_id)
) WITHOUT ROWID;

INSERT OR IGNORE INTO job_providers (provider, owner_id, job_id, in_route)
SELECT r.value, j.owner_id, j.id, 1 FROM jobs j, json_each(j.intent, '$.route') r;

INSERT OR IGNORE INTO job_providers (provider, owner_id, job_id, in_route)
SELECT a.provider, j.owner_id, j.id, 0 FROM attempts a JOIN jobs j ON j.id = a.job_id;

CREATE TRIGGER jobs_name_providers AFTER INSERT ON jobs
BEGIN
    INSERT OR IGNORE INTO job_providers (provider, owner_id, job_id, in_route)
    SELECT value, NEW.owner_id, NEW.id, 1 FROM json_each(NEW.intent, '$.route');
END;

CREATE TRIGGER attempts_name_providers AFTER INSERT ON attempts
BEGIN
    INSERT OR IGNORE INTO job_providers (provider, owner_id, job_id, in_route)
    SELECT NEW.provider, owner_id, id, 0 FROM jobs WHERE id = NEW.job_id;
END;

-- Open jobs of every owner: the few that removing a provider would touch.
CREATE INDEX jobs_open ON jobs (status) WHERE status IN ('queued', 'running', 'unknown');

-- Open jobs by the contract they name: the few that removing a contract would touch.
CREATE INDEX jobs_open_by_contract ON jobs (json_extract(intent, '$.contract'))
    WHERE status IN ('queued', 'running', 'unknown');

