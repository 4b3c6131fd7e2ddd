-- The last event committed now, of any owner: no event will ever sort at or before it that is
-- not there already (ids are in commit order, see feed.sql). No row while there is none.
SELECT 0 AS tx, id FROM job_events ORDER BY id DESC LIMIT 1
