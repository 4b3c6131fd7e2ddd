-- What budget $1 holds in its period now (UTC day or month), in billionths: the totals the
-- ledger keeps per day (`charged_days`) of the attempts it covers, sent since the period began
-- (`onejob_budget_used`, migration 0014).
SELECT onejob_budget_used($1) AS used
