-- The head of a page of the owner's jobs as the Jobs list shows them, as `SummaryRow` reads
-- them (`jobs::page::<SummaryRow>`): the intent only as its route, the result not at all.
-- The rest is built at run time by store/jobs/search.rs after it, as for `jobs/page.sql`.
SELECT j.id, j.owner_id, j.idempotency_key, j.status, j.version,
       json_extract(j.intent, '$.route') AS route, j.flagged_for_review,
       j.created_at, j.updated_at, j.finished_at
