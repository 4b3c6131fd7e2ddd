-- What an attempt costs (SPEC §17), as in the SQLite ledger's 0012: in billionths of its
-- currency's unit (docs/adr/0060), set when it moves to `in_flight` at a provider with a price
-- (the price it is sent at and its worst case), `cost_nanos` once the answer reports what it
-- used. All NULL for an attempt at a provider without a price.
ALTER TABLE attempts
    ADD COLUMN currency text,
    ADD COLUMN price text,                                 -- the provider's `price` as JSON
    ADD COLUMN worst_nanos bigint,
    ADD COLUMN cost_nanos bigint;
