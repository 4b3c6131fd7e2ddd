-- One index for open jobs, in place of three: every submit writes each index of `jobs`, and
-- every index adds pages to the commit that holds the job. Open jobs by status in id order
-- serve the executor's queue (queued, oldest first), the earliest backoff, and what removing
-- a provider or a contract would touch (the contract is read from each open job's intent:
-- open jobs are few next to the history).
-- Queries name the index's condition (`status IN ('queued', 'running', 'unknown')`) beside
-- their own, so SQLite's planner knows the partial index covers them.
DROP INDEX jobs_queued;
DROP INDEX jobs_open;
DROP INDEX jobs_open_by_contract;
CREATE INDEX jobs_open_by_status ON jobs (status, id) WHERE status IN ('queued', 'running', 'unknown');
