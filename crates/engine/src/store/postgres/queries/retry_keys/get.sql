-- Owner $1's retry under key $2: its fingerprint, job and attempt; no row when there is none.
SELECT fingerprint, job_id::text AS job_id, attempt_id::text AS attempt_id
FROM retry_keys WHERE owner_id = $1 AND idempotency_key = $2
