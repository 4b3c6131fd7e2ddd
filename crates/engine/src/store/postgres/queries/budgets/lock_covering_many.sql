-- PostgreSQL only: the budgets that cover any of attempts $1[i] charged in currency $2[i]
-- (NULL: not charged), each one's row taken FOR UPDATE in name order, as
-- `budgets/covering.sql` takes one attempt's, before a run of sends (`attempts/send_many.sql`)
-- reads what they hold in a statement of its own, which then sees every send committed under
-- them meanwhile. Rows: their names.
SELECT b.name
FROM budgets b
WHERE EXISTS (
    SELECT 1
    FROM unnest((SELECT $1::uuid[]), (SELECT $2::text[])) AS i (id, currency)
    JOIN attempts a ON a.id = i.id
    JOIN jobs j ON j.id = a.job_id
    WHERE onejob_budget_covers(b, i.currency, a.provider, j.owner_id))
ORDER BY b.name
FOR UPDATE OF b
