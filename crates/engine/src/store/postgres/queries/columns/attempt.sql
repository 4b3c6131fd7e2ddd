-- The columns of an attempt's row, as every statement that returns a whole attempt gives them
-- and `store::rows::AttemptRow` reads them, by name: ids and JSON as text, times in the
-- ledger's text form (`onejob_time`), as the SQLite ledger stores them. A query writes
-- `{attempt_columns}` for this list, or `{a.attempt_columns}` for it with each column taken
-- from `a`; the build fills it in (crates/engine/build.rs, docs/adr/0058).
id::text AS id, job_id::text AS job_id, number, provider, state, job_version, request_id,
http_status, error_kind, error_message, executor_id,
onejob_time(lease_expires_at) AS lease_expires_at, flagged_for_review,
onejob_time(created_at) AS created_at, onejob_time(sent_at) AS sent_at,
onejob_time(finished_at) AS finished_at, usage::text AS usage, currency, worst_nanos,
cost_nanos
