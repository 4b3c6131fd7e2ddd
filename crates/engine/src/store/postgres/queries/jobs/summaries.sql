-- The head of a page of the owner's jobs as the Jobs list shows them, as `SummaryRow` reads
-- them (`jobs::page::<SummaryRow>`): the intent only as its route, the result not at all.
-- The rest is built at run time by store/jobs/search.rs after it, as for `jobs/page.sql`.
SELECT j.id::text AS id, j.owner_id, j.idempotency_key, j.status, j.version,
       (j.intent -> 'route')::text AS route, j.flagged_for_review,
       onejob_time(j.created_at) AS created_at, onejob_time(j.updated_at) AS updated_at,
       onejob_time(j.finished_at) AS finished_at
