-- The job's next attempt, pending, with its `attempt_created` event, in one call; no row, and
-- no event, while another is open: the partial unique index refuses it, and that refusal is
-- the only check.
-- ?1 id, ?2 job id, ?3 provider, ?4 the job's version; the event's ?5 kind, ?6 actor, and
-- ?7 whether a person chose the provider.
INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
VALUES (?1, ?2, (SELECT coalesce(max(number), 0) + 1 FROM attempts WHERE job_id = ?2), ?3,
        'pending', ?4, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
RETURNING id, job_id, number, provider, state, job_version, request_id,
       http_status, error_kind, error_message, executor_id, lease_expires_at,
       flagged_for_review, created_at, sent_at, finished_at, usage;
-- changes() counts the rows the INSERT above added itself (1 or 0).
INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
SELECT job_id, id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?5, ?6,
       json_object('number', number, 'provider', provider,
                   'explicit', json(CASE WHEN ?7 THEN 'true' ELSE 'false' END))
FROM attempts WHERE id = ?1 AND changes() = 1;
