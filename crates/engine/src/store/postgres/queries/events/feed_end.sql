-- The feed's end now: before every transaction still running (or yet to start), so every event
-- that commits from now on sorts after it. The end must outlive a crash. Transactions that took
-- ids and rolled back just before leave nothing on disk, and a server that crashed then would
-- hand their ids out again, below the end, to events a stream resuming from it would never see
-- (and the end itself would then look like another ledger's). So the statement takes an id of
-- its own and writes a record to the WAL in its transaction (a logical decoding message, which
-- any role may write and nothing replays), and its commit is flushed to disk as a commit that
-- wrote is: after a crash the server hands out only ids above the end.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS tx, 0::bigint AS id
WHERE pg_current_xact_id() IS NOT NULL
  AND pg_logical_emit_message(true, 'onejob', 'feed end') IS NOT NULL
