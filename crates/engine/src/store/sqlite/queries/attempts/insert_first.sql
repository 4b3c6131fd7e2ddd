-- A queued job's first attempt, at its route's primary (where the route policy starts every
-- job), pending, with its `attempt_created` event and the job moved from `queued` to
-- `running`, in one call. Written only while the job is queued with no backoff set and no
-- attempt yet, its primary is configured, and its contract, if it names one, too; otherwise
-- nothing is written and the caller decides by the policy.
-- ?1 id, ?2 job id; the event's ?3 kind and ?4 actor.
-- Rows: the attempt as inserted, then the job as moved; none when nothing was written.
INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
SELECT ?1, j.id, 1, json_extract(j.intent, '$.route[0]'), 'pending', j.version,
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM jobs j
WHERE j.id = ?2 AND j.status = 'queued' AND j.not_before IS NULL
  AND NOT EXISTS (SELECT 1 FROM attempts WHERE job_id = ?2)
  AND EXISTS (SELECT 1 FROM providers WHERE name = json_extract(j.intent, '$.route[0]'))
  AND (json_extract(j.intent, '$.contract') IS NULL
       OR EXISTS (SELECT 1 FROM contracts WHERE name = json_extract(j.intent, '$.contract')))
ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
RETURNING {attempt_columns};
-- changes() counts the rows the INSERT above added itself (1 or 0).
INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
SELECT job_id, id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?3, ?4,
       json_object('number', number, 'provider', provider, 'explicit', json('false'))
FROM attempts WHERE id = ?1 AND changes() = 1;
UPDATE jobs SET status = 'running', not_before = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?2 AND status = 'queued' AND EXISTS (SELECT 1 FROM attempts WHERE id = ?1)
RETURNING {job_columns};
