-- The hash of contract ?1's content.
SELECT hash FROM contracts WHERE name = ?1
