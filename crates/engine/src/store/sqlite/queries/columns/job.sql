-- The columns of a job's row, as every statement that returns a whole job gives them and
-- `store::rows::JobRow` reads them, by name. A query writes `{job_columns}` for this list, or
-- `{j.job_columns}` for it with each column taken from `j`; the build fills it in
-- (crates/engine/build.rs, docs/adr/0058). A list with fewer or measured columns (the Jobs
-- list's summaries, `jobs/shown.sql`) is a row of another shape, written where it is read.
id, owner_id, idempotency_key, fingerprint, intent, status, version, completed_by, result, error,
flagged_for_review, created_at, updated_at, finished_at, not_before
