-- Budgets (SPEC §17): a limit on what attempts may spend in a period, for one owner's jobs or
-- every owner's, at one provider or every one, in one currency. Nothing is counted here: what a
-- budget has reserved and spent is summed from the attempts it covers, sent in its period
-- (docs/adr/0063). A send under a budget takes its row first (SQLite: the file's write lock;
-- PostgreSQL: `FOR UPDATE`), so two senders never both count the budget's last money as free.
CREATE TABLE budgets (
    name         TEXT PRIMARY KEY,
    owner_id     TEXT,                                   -- NULL: every owner's jobs
    provider     TEXT,                                   -- NULL: every provider
    currency     TEXT NOT NULL,
    limit_nanos  INTEGER NOT NULL CHECK (limit_nanos >= 0),
    period       TEXT NOT NULL CHECK (period IN ('day', 'month')),
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);

-- A budget's attempts: those of its currency and provider sent since its period began, with
-- what the sum of what it holds reads, so that sum reads this index alone.
CREATE INDEX attempts_charged ON attempts
    (currency, provider, sent_at, state, error_kind, worst_nanos, cost_nanos)
    WHERE currency IS NOT NULL;
