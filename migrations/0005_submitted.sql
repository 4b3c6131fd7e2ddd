-- One trigger after a job is inserted, instead of two: its `submitted` event and the providers
-- its route names are written by one trigger program (each program a submit runs costs it
-- time, and a submit is the one write a person waits on).
DROP TRIGGER jobs_submitted_event;
DROP TRIGGER jobs_name_providers;

CREATE TRIGGER jobs_submitted AFTER INSERT ON jobs
BEGIN
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    VALUES (NEW.id, NULL, NEW.created_at, 'submitted', 'user',
            json_object('idempotency_key', NEW.idempotency_key, 'fingerprint', NEW.fingerprint));
    INSERT OR IGNORE INTO job_providers (provider, owner_id, job_id, in_route)
    SELECT value, NEW.owner_id, NEW.id, 1 FROM json_each(NEW.intent, '$.route');
END;
