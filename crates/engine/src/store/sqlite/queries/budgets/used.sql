-- What budget ?1 holds in its period now (UTC day or month), in billionths (`budget_held`,
-- migration 0014: the days of the attempts it covers, sent since the period began).
SELECT coalesce((SELECT used FROM budget_held WHERE name = ?1), 0) AS used
