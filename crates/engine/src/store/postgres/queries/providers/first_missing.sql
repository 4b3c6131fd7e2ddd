-- The first of the names in $1 (a JSON array) that is not a configured provider, with its index.
SELECT r.i - 1, r.name FROM json_array_elements_text($1::json) WITH ORDINALITY AS r (name, i)
WHERE r.name NOT IN (SELECT name FROM providers)
ORDER BY r.i LIMIT 1
