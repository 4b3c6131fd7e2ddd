-- Which budgets cover a send (SPEC §17), said once for PostgreSQL: budget $1 covers an
-- attempt charged in currency $2 at provider $3 for owner $4 when the currency is the budget's
-- and the budget names no provider or this one, and no owner or this one. `onejob_covering`
-- (one send, redefined here to ask it), `budgets/lock_covering_many.sql` and
-- `attempts/send_many.sql` (a run of sends) all ask it; a plain SQL function, inlined where it
-- is asked. SQLite's `budgets/covering.sql` says the same in its own dialect.
CREATE FUNCTION onejob_budget_covers(b budgets, currency text, provider text, owner_id text)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT $1.currency = $2
       AND ($1.provider IS NULL OR $1.provider = $3)
       AND ($1.owner_id IS NULL OR $1.owner_id = $4)
$$;

CREATE OR REPLACE FUNCTION onejob_covering(attempt uuid, cur text)
RETURNS TABLE (name text, limit_nanos bigint, next_in_ms bigint, used bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1
    FROM attempts a JOIN jobs j ON j.id = a.job_id
    JOIN budgets b ON onejob_budget_covers(b, cur, a.provider, j.owner_id)
    WHERE a.id = attempt
    ORDER BY b.name
    FOR UPDATE OF b;
    RETURN QUERY
    SELECT b.name, b.limit_nanos,
           (extract(epoch FROM (CASE b.period
                                    WHEN 'day' THEN date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day'
                                    ELSE date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month'
                                END) - (now() AT TIME ZONE 'UTC')) * 1000)::bigint + 1,
           onejob_budget_used(b.name)
    FROM attempts a JOIN jobs j ON j.id = a.job_id
    JOIN budgets b ON onejob_budget_covers(b, cur, a.provider, j.owner_id)
    WHERE a.id = attempt
    ORDER BY b.name;
END
$$;
