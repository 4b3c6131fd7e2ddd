-- What an attempt costs (SPEC §17), in billionths of its currency's unit (docs/adr/0060). Set
-- when it moves to `in_flight` at a provider with a price: the price it is sent at (a copy, so a
-- later change of price changes nothing spent) and its worst case; `cost_nanos` once the answer
-- reports what it used. All NULL for an attempt at a provider without a price.
ALTER TABLE attempts ADD COLUMN currency TEXT;
ALTER TABLE attempts ADD COLUMN price TEXT;               -- the provider's `price` as JSON
ALTER TABLE attempts ADD COLUMN worst_nanos INTEGER;
ALTER TABLE attempts ADD COLUMN cost_nanos INTEGER;
