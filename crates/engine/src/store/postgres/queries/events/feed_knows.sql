-- Whether position ($1 transaction, $2 id) is one this ledger's feed gave: an event's own
-- (transaction, id), or an end (id 0) no later than the transactions started so far.
SELECT CASE WHEN $2::bigint = 0
            THEN $1::text::xid8 <= pg_snapshot_xmax(pg_current_snapshot())
            ELSE EXISTS (SELECT 1 FROM job_events WHERE tx = $1::text::xid8 AND id = $2::bigint)
       END
