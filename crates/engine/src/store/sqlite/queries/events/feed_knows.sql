-- Whether position ?2 is one this ledger's feed gave: no later than its last event, since no
-- event is ever removed (?1, a PostgreSQL position's transaction, is always 0 here).
SELECT ?2 <= (SELECT COALESCE(MAX(id), 0) FROM job_events)
