-- Sets a job's backoff to end ?1 milliseconds from now, or clears it (?1 NULL). ?2 id.
UPDATE jobs SET not_before = CASE WHEN ?1 IS NULL THEN NULL
    ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (?1 / 1000.0) || ' seconds') END
WHERE id = ?2
