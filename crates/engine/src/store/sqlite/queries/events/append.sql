-- Appends one event to job ?1's history (attempt ?2, kind ?3, actor ?4, detail ?5 as JSON text).
INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?3, ?4, ?5)
