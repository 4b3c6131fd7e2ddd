-- The job's next attempt, pending, with its `attempt_created` event, and with ?8 its job moved
-- from `queued` to `running`, in one call. Nothing is written while another attempt is open
-- (the partial unique index refuses it, and that refusal is the only check) or when no
-- provider ?3 is configured.
-- ?1 id, ?2 job id, ?3 provider, ?4 the job's version; the event's ?5 kind, ?6 actor, and
-- ?7 whether a person chose the provider; ?9 the bulk operation that applied a person's
-- action, which the event names (`"bulk": id`), or NULL.
-- Rows: the attempt as inserted, then the job as moved; none when nothing was written.
INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
SELECT ?1, ?2, (SELECT coalesce(max(number), 0) + 1 FROM attempts WHERE job_id = ?2), ?3,
       'pending', ?4, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE EXISTS (SELECT 1 FROM providers WHERE name = ?3)
ON CONFLICT (job_id) WHERE state IN ('pending', 'in_flight', 'unknown') DO NOTHING
RETURNING {attempt_columns};
-- changes() counts the rows the INSERT above added itself (1 or 0).
INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
SELECT job_id, id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?5, ?6,
       CASE WHEN ?9 IS NULL
            THEN json_object('number', number, 'provider', provider,
                             'explicit', json(CASE WHEN ?7 THEN 'true' ELSE 'false' END))
            ELSE json_object('number', number, 'provider', provider,
                             'explicit', json(CASE WHEN ?7 THEN 'true' ELSE 'false' END),
                             'bulk', ?9)
       END
FROM attempts WHERE id = ?1 AND changes() = 1;
UPDATE jobs SET status = 'running', not_before = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?2 AND ?8 AND status = 'queued' AND EXISTS (SELECT 1 FROM attempts WHERE id = ?1)
RETURNING {job_columns};
