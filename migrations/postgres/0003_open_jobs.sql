-- One index for open jobs, in place of three, as in the SQLite ledger's 0004: every submit
-- writes each index of `jobs`. Open jobs by status in id order serve the executor's queue
-- (queued, oldest first), the earliest backoff, and what removing a provider or a contract
-- would touch (the contract is read from each open job's intent: open jobs are few next to the
-- history). PostgreSQL sees by itself that `status = 'queued'` lies within the index.
DROP INDEX jobs_queued;
DROP INDEX jobs_open;
DROP INDEX jobs_open_by_contract;
CREATE INDEX jobs_open_by_status ON jobs (status, id) WHERE status IN ('queued', 'running', 'unknown');
