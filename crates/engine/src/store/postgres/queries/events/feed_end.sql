-- The feed's end now: before every transaction still running (or yet to start), so every event
-- that commits from now on sorts after it.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS tx, 0::bigint AS id
