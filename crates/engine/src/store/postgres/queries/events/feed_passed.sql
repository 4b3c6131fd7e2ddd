-- The last event, of any owner, whose transaction had ended for every snapshot when this
-- statement began: every transaction before it has ended too, so no event will ever sort at or
-- before it that is not there already. It is a row on disk, so it outlives a crash (unlike an
-- id taken and rolled back; see feed_end.sql). No row while there is none.
SELECT e.tx::text::bigint AS tx, e.id FROM job_events AS e
WHERE e.tx < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY e.tx DESC, e.id DESC
LIMIT 1
