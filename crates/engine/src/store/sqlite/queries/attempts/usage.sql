-- An attempt's recorded token usage.
SELECT usage FROM attempts WHERE id = ?1
