-- The head of a page of the owner's jobs as whole rows (`jobs::page::<JobRow>`): what each
-- row holds.
-- The rest, from the jobs that pass the list's filter to the page's limit, is built at run
-- time by store/jobs/search.rs after it.
SELECT {j.job_columns}
