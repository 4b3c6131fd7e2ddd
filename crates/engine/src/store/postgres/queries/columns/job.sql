-- The columns of a job's row, as every statement that returns a whole job gives them and
-- `store::rows::JobRow` reads them, by name: ids and JSON as text, times in the ledger's text
-- form (`onejob_time`), as the SQLite ledger stores them. A query writes `{job_columns}` for
-- this list, or `{j.job_columns}` for it with each column taken from `j`; the build fills it in
-- (crates/engine/build.rs, docs/adr/0058). A list with fewer or measured columns (the Jobs
-- list's summaries, `jobs/shown.sql`) is a row of another shape, written where it is read.
id::text AS id, owner_id, idempotency_key, fingerprint, intent::text AS intent, status, version,
completed_by::text AS completed_by, result::text AS result, error::text AS error,
flagged_for_review, onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at,
onejob_time(finished_at) AS finished_at, onejob_time(not_before) AS not_before
