-- What each day holds (SPEC §17), kept as attempts change, so that a send under a budget reads
-- a few totals instead of summing every attempt its period covers (docs/adr/0064). SQLite
-- only: its one writer makes a running total free of contention; on PostgreSQL every host's
-- sends would queue on the same rows, and a budget still sums its attempts there.

-- What an attempt holds of its currency now, in billionths: in flight or `unknown`, its worst
-- case; ended, what it spent (its settled cost, else its worst case), but nothing for a failure
-- that proves nothing was sent or was refused before any effect; nothing while pending or
-- unpriced. The rule is `money::charged`'s; `the_ledgers_held_rule_is_the_money_rule` holds
-- the two together.
ALTER TABLE attempts ADD COLUMN held_nanos INTEGER GENERATED ALWAYS AS (
    CASE WHEN currency IS NULL OR sent_at IS NULL OR state = 'pending' THEN 0
         WHEN state IN ('in_flight', 'unknown') THEN coalesce(worst_nanos, 0)
         WHEN state = 'failed'
              AND error_kind IN ('never_sent', 'misconfigured', 'budget_reached', 'rejected',
                                 'throttled', 'server_error', 'server_error_keyed',
                                 'reconciled_failed', 'resolved_by_person', 'cancelled') THEN 0
         ELSE coalesce(cost_nanos, worst_nanos, 0) END
) VIRTUAL;

-- The sum of `held_nanos` of the attempts of one currency, provider and owner sent on one UTC
-- day (`day` is the first ten characters of `sent_at`).
CREATE TABLE charged_days (
    currency    TEXT NOT NULL,
    provider    TEXT NOT NULL,
    owner_id    TEXT NOT NULL,
    day         TEXT NOT NULL,
    held_nanos  INTEGER NOT NULL,
    PRIMARY KEY (currency, provider, day, owner_id)
) WITHOUT ROWID;

INSERT INTO charged_days (currency, provider, owner_id, day, held_nanos)
SELECT a.currency, a.provider, j.owner_id, substr(a.sent_at, 1, 10), sum(a.held_nanos)
FROM attempts a JOIN jobs j ON j.id = a.job_id
WHERE a.held_nanos <> 0
GROUP BY 1, 2, 3, 4;

-- Kept by the ledger itself, whichever statement changes an attempt: what the attempt held
-- before is taken from its day, what it holds now is added to its day.
CREATE TRIGGER attempts_held_added AFTER INSERT ON attempts
WHEN NEW.held_nanos <> 0
BEGIN
    INSERT INTO charged_days (currency, provider, owner_id, day, held_nanos)
    SELECT NEW.currency, NEW.provider, j.owner_id, substr(NEW.sent_at, 1, 10), NEW.held_nanos
    FROM jobs j WHERE j.id = NEW.job_id
    ON CONFLICT (currency, provider, day, owner_id)
    DO UPDATE SET held_nanos = held_nanos + excluded.held_nanos;
END;

CREATE TRIGGER attempts_held_changed
AFTER UPDATE OF state, error_kind, worst_nanos, cost_nanos, sent_at, currency, provider, job_id
ON attempts
WHEN OLD.held_nanos <> 0 OR NEW.held_nanos <> 0
BEGIN
    INSERT INTO charged_days (currency, provider, owner_id, day, held_nanos)
    SELECT OLD.currency, OLD.provider, j.owner_id, substr(OLD.sent_at, 1, 10), -OLD.held_nanos
    FROM jobs j WHERE j.id = OLD.job_id AND OLD.held_nanos <> 0
    ON CONFLICT (currency, provider, day, owner_id)
    DO UPDATE SET held_nanos = held_nanos + excluded.held_nanos;
    INSERT INTO charged_days (currency, provider, owner_id, day, held_nanos)
    SELECT NEW.currency, NEW.provider, j.owner_id, substr(NEW.sent_at, 1, 10), NEW.held_nanos
    FROM jobs j WHERE j.id = NEW.job_id AND NEW.held_nanos <> 0
    ON CONFLICT (currency, provider, day, owner_id)
    DO UPDATE SET held_nanos = held_nanos + excluded.held_nanos;
END;

CREATE TRIGGER attempts_held_removed AFTER DELETE ON attempts
WHEN OLD.held_nanos <> 0
BEGIN
    INSERT INTO charged_days (currency, provider, owner_id, day, held_nanos)
    SELECT OLD.currency, OLD.provider, j.owner_id, substr(OLD.sent_at, 1, 10), -OLD.held_nanos
    FROM jobs j WHERE j.id = OLD.job_id
    ON CONFLICT (currency, provider, day, owner_id)
    DO UPDATE SET held_nanos = held_nanos + excluded.held_nanos;
END;

-- What each budget holds in its period now (UTC day or month), in billionths: the days of the
-- attempts it covers, sent since the period began. Read by a send under the budget while the
-- writer holds the file, and by the list of budgets.
CREATE VIEW budget_held AS
SELECT b.name AS name, coalesce(sum(c.held_nanos), 0) AS used
FROM budgets b
LEFT JOIN charged_days c
       ON c.currency = b.currency
      AND (b.provider IS NULL OR c.provider = b.provider)
      AND (b.owner_id IS NULL OR c.owner_id = b.owner_id)
      AND c.day >= CASE b.period WHEN 'day' THEN strftime('%Y-%m-%d', 'now')
                                 ELSE strftime('%Y-%m-01', 'now') END
GROUP BY b.name;
