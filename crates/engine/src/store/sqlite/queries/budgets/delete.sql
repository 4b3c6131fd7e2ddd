-- Removes budget ?1, only owner ?2's where ?2 is not NULL.
DELETE FROM budgets WHERE name = ?1 AND (?2 IS NULL OR owner_id = ?2)
