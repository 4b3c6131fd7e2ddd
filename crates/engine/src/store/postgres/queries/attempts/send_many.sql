-- PostgreSQL only: `move.sql` from `pending` to `in_flight` for the executor, for several
-- attempts in one statement (a run of the group commit's writes, each attempt of another job).
-- Attempt $1[i] moves only while it is `pending` and its job `running` without a result,
-- taking executor $2[i] and a lease of $3[i] milliseconds from the moment it is written
-- (clock_timestamp(), by the database's clock: never from the start of a transaction that waited),
-- and gets its event ($5 kind, $6 actor, detail $4[i], JSON text). At a provider with a price
-- it is charged as `charge.sql` charges it (currency $7[i], the price's JSON $8[i], its worst
-- case $9[i]; all three NULL without a price), and reserved against every budget that covers
-- it (SPEC §17): it moves only if each is among those the run took first ($10, by
-- `budgets/lock_covering_many.sql`) and what the budget holds (read by this statement, after
-- the lock) plus the worst cases of the run's attempts it covers, this one and those before it
-- in the run whether they move or not, stays within its limit. That sum is never less than what
-- the run reserves, so no budget is passed; an attempt it leaves out is decided by its own
-- write's statements, which see what the run reserved. Returns the attempts that moved, with
-- the columns of columns/attempt.sql; one not returned wrote nothing, and its caller reads why,
-- as after `move.sql`.
WITH i AS (
    SELECT * FROM unnest((SELECT $1::uuid[]), (SELECT $2::text[]), (SELECT $3::bigint[]),
                         (SELECT $4::text[]), (SELECT $7::text[]), (SELECT $8::text[]),
                         (SELECT $9::bigint[]))
        WITH ORDINALITY AS i (id, executor_id, lease_ms, detail, currency, price, worst_nanos, ord)
), covered AS (
    SELECT i.ord, b.name, b.limit_nanos,
           sum(i.worst_nanos) OVER (PARTITION BY b.name ORDER BY i.ord) AS run_upto
    FROM i
    JOIN attempts a ON a.id = i.id
    JOIN jobs j ON j.id = a.job_id
    JOIN budgets b ON onejob_budget_covers(b, i.currency, a.provider, j.owner_id)
    WHERE i.currency IS NOT NULL
), held AS (
    SELECT n.name, onejob_budget_used(n.name) AS used
    FROM (SELECT DISTINCT name FROM covered) n
), left_out AS (
    SELECT c.ord
    FROM covered c JOIN held h ON h.name = c.name
    WHERE c.name <> ALL ($10::text[]) OR h.used + c.run_upto > c.limit_nanos
), a AS (
    UPDATE attempts SET state = 'in_flight', executor_id = i.executor_id,
        lease_expires_at = date_trunc('milliseconds', clock_timestamp())
                           + i.lease_ms * interval '1 millisecond',
        sent_at = onejob_now(),
        currency = coalesce(i.currency, attempts.currency),
        price = coalesce(i.price, attempts.price),
        worst_nanos = CASE WHEN i.currency IS NULL THEN attempts.worst_nanos
                           ELSE i.worst_nanos END
    FROM i
    WHERE attempts.id = i.id AND attempts.state = 'pending'
      AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = attempts.job_id
                  AND j.status = 'running' AND j.completed_by IS NULL)
      AND i.ord NOT IN (SELECT ord FROM left_out)
    RETURNING attempts.*, i.detail AS event_detail
), logged AS (
    INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
    SELECT a.job_id, a.id, onejob_now(), $5, $6, a.event_detail::json FROM a
)
SELECT {a.attempt_columns}
FROM a
