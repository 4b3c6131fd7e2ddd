-- The budgets that cover attempt $1, charged in currency $2, by name, each with its limit, the
-- milliseconds until its next period (UTC) and what it holds now (`onejob_covering`, migration
-- 0014): each budget's row is taken FOR UPDATE first, in name order, so another host sending
-- under it waits for this transaction's end; what it holds is read after the lock, and counts
-- every send committed under it meanwhile.
SELECT name, limit_nanos, next_in_ms, used FROM onejob_covering(onejob_uuid($1), $2)
