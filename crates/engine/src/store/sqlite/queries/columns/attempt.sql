-- The columns of an attempt's row, as every statement that returns a whole attempt gives them
-- and `store::rows::AttemptRow` reads them, by name. A query writes `{attempt_columns}` for
-- this list, or `{a.attempt_columns}` for it with each column taken from `a`; the build fills
-- it in (crates/engine/build.rs, docs/adr/0058).
id, job_id, number, provider, state, job_version, request_id, http_status, error_kind,
error_message, executor_id, lease_expires_at, flagged_for_review, created_at, sent_at,
finished_at, usage, currency, worst_nanos, cost_nanos
