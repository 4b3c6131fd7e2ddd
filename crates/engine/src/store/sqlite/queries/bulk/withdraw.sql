-- Takes operation ?1's undecided jobs out of any run (a run's `decide` then finds them decided),
-- in the transaction that discards the operation; how many rows is what it took.
UPDATE bulk_items SET outcome = 'withdrawn' WHERE operation_id = ?1 AND outcome IS NULL
