-- What each day holds (SPEC §17), as in the SQLite ledger's 0014, kept as attempts change, so
-- that a send under a budget reads a few totals instead of summing every attempt its period
-- covers (docs/adr/0064). Each day's total is split in 32 parts by the connection that writes
-- it, so that hosts sending at one provider at once rarely write the same row, and never wait
-- for one another here beyond what a budget's own row makes them.

-- What an attempt holds of its currency now, in billionths: in flight or `unknown`, its worst
-- case; ended, what it spent (its settled cost, else its worst case), but nothing for a failure
-- that proves nothing was sent or was refused before any effect; nothing while pending or
-- unpriced. The rule is `money::charged`'s; `the_ledgers_held_rule_is_the_money_rule` holds
-- the two together.
CREATE FUNCTION onejob_held(state text, error_kind text, currency text, sent_at timestamptz,
                            worst_nanos bigint, cost_nanos bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN currency IS NULL OR sent_at IS NULL OR state = 'pending' THEN 0
                WHEN state IN ('in_flight', 'unknown') THEN coalesce(worst_nanos, 0)
                WHEN state = 'failed'
                     AND error_kind IN ('never_sent', 'misconfigured', 'budget_reached',
                                        'rejected', 'throttled', 'server_error',
                                        'server_error_keyed', 'reconciled_failed',
                                        'resolved_by_person', 'cancelled') THEN 0
                ELSE coalesce(cost_nanos, worst_nanos, 0) END
$$;

-- The sum of `onejob_held` of the attempts of one currency, provider and owner sent on one UTC
-- day, in parts (`part`: the writing connection's process id modulo 32).
CREATE TABLE charged_days (
    currency    text NOT NULL,
    provider    text NOT NULL,
    day         date NOT NULL,
    owner_id    text NOT NULL,
    part        smallint NOT NULL,
    held_nanos  bigint NOT NULL,
    PRIMARY KEY (currency, provider, day, owner_id, part)
);

INSERT INTO charged_days (currency, provider, day, owner_id, part, held_nanos)
SELECT a.currency, a.provider, (a.sent_at AT TIME ZONE 'UTC')::date, j.owner_id, 0,
       sum(onejob_held(a.state, a.error_kind, a.currency, a.sent_at, a.worst_nanos, a.cost_nanos))
FROM attempts a JOIN jobs j ON j.id = a.job_id
WHERE a.currency IS NOT NULL AND a.sent_at IS NOT NULL
GROUP BY 1, 2, 3, 4;

-- Adds `held` to the day of an attempt of `job` in `currency` at `provider` sent at `sent_at`.
CREATE FUNCTION onejob_charge_day(currency text, provider text, job uuid, sent_at timestamptz,
                                  held bigint)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO charged_days AS c (currency, provider, day, owner_id, part, held_nanos)
    SELECT currency, provider, (sent_at AT TIME ZONE 'UTC')::date, j.owner_id,
           pg_backend_pid() % 32, held
    FROM jobs j WHERE j.id = job
    ON CONFLICT (currency, provider, day, owner_id, part)
    DO UPDATE SET held_nanos = c.held_nanos + excluded.held_nanos
$$;

-- Kept by the ledger itself, whichever statement changes an attempt: what the attempt held
-- before is taken from its day, what it holds now is added to its day.
CREATE FUNCTION onejob_attempt_held() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before := onejob_held(OLD.state, OLD.error_kind, OLD.currency, OLD.sent_at,
                              OLD.worst_nanos, OLD.cost_nanos);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after := onejob_held(NEW.state, NEW.error_kind, NEW.currency, NEW.sent_at,
                             NEW.worst_nanos, NEW.cost_nanos);
    END IF;
    IF TG_OP = 'UPDATE' AND before = after
       AND (OLD.currency, OLD.provider, OLD.job_id, OLD.sent_at)
           IS NOT DISTINCT FROM (NEW.currency, NEW.provider, NEW.job_id, NEW.sent_at) THEN
        RETURN NULL;
    END IF;
    IF before <> 0 THEN
        PERFORM onejob_charge_day(OLD.currency, OLD.provider, OLD.job_id, OLD.sent_at, -before);
    END IF;
    IF after <> 0 THEN
        PERFORM onejob_charge_day(NEW.currency, NEW.provider, NEW.job_id, NEW.sent_at, after);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER attempts_held_added AFTER INSERT ON attempts
FOR EACH ROW WHEN (NEW.currency IS NOT NULL)
EXECUTE FUNCTION onejob_attempt_held();

CREATE TRIGGER attempts_held_changed
AFTER UPDATE OF state, error_kind, worst_nanos, cost_nanos, sent_at, currency, provider, job_id
ON attempts
FOR EACH ROW WHEN (OLD.currency IS NOT NULL OR NEW.currency IS NOT NULL)
EXECUTE FUNCTION onejob_attempt_held();

CREATE TRIGGER attempts_held_removed AFTER DELETE ON attempts
FOR EACH ROW WHEN (OLD.currency IS NOT NULL)
EXECUTE FUNCTION onejob_attempt_held();

-- What budget `budget` holds in its period now (UTC day or month), in billionths: the days of
-- the attempts it covers, sent since the period began, as the calling statement sees them.
-- PL/pgSQL, whose statement's plan is kept for the session, where a SQL function's would be
-- made again at each call.
CREATE FUNCTION onejob_budget_used(budget text) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
        SELECT coalesce(sum(c.held_nanos), 0)::bigint
        FROM budgets b
        JOIN charged_days c ON c.currency = b.currency
                           AND (b.provider IS NULL OR c.provider = b.provider)
                           AND (b.owner_id IS NULL OR c.owner_id = b.owner_id)
        WHERE b.name = budget
          AND c.day >= CASE b.period
                           WHEN 'day' THEN (now() AT TIME ZONE 'UTC')::date
                           ELSE date_trunc('month', now() AT TIME ZONE 'UTC')::date
                       END
    );
END
$$;

-- The budgets that cover attempt `attempt`, charged in `cur`, by name, each with its limit, the
-- milliseconds until its next period and what it holds: each budget's row is taken first, in
-- name order (another host sending under it waits here for this transaction's end), and what
-- it holds is read after, by a statement of its own, which sees every send committed under it
-- meanwhile. One round trip for the send.
CREATE FUNCTION onejob_covering(attempt uuid, cur text)
RETURNS TABLE (name text, limit_nanos bigint, next_in_ms bigint, used bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1
    FROM attempts a JOIN jobs j ON j.id = a.job_id
    JOIN budgets b ON b.currency = cur
                  AND (b.provider IS NULL OR b.provider = a.provider)
                  AND (b.owner_id IS NULL OR b.owner_id = j.owner_id)
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
    JOIN budgets b ON b.currency = cur
                  AND (b.provider IS NULL OR b.provider = a.provider)
                  AND (b.owner_id IS NULL OR b.owner_id = j.owner_id)
    WHERE a.id = attempt
    ORDER BY b.name;
END
$$;
