-- Records owner $1's retry under key $2 (fingerprint $3) as attempt $5 of job $4, unless the key
-- is taken (a transaction that holds it is waited for); one row affected when it was recorded.
INSERT INTO retry_keys (owner_id, idempotency_key, fingerprint, job_id, attempt_id, created_at)
VALUES ($1, $2, $3, onejob_uuid($4), onejob_uuid($5), onejob_now())
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
