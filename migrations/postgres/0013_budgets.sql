-- Budgets (SPEC §17), as in the SQLite ledger's 0013: a limit on what attempts may spend in a
-- period, for one owner's jobs or every owner's, at one provider or every one, in one currency.
-- What a budget has reserved and spent is summed from the attempts it covers (docs/adr/0063); a
-- send under a budget takes its row `FOR UPDATE` first, so two hosts never both count the
-- budget's last money as free.
CREATE TABLE budgets (
    name         text PRIMARY KEY,
    owner_id     text,                                   -- NULL: every owner's jobs
    provider     text,                                   -- NULL: every provider
    currency     text NOT NULL,
    limit_nanos  bigint NOT NULL CHECK (limit_nanos >= 0),
    period       text NOT NULL CHECK (period IN ('day', 'month')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- A budget's attempts: those of its currency and provider sent since its period began, with
-- what the sum of what it holds reads, so that sum reads this index alone.
CREATE INDEX attempts_charged ON attempts
    (currency, provider, sent_at, state, error_kind, worst_nanos, cost_nanos)
    WHERE currency IS NOT NULL;
