-- The last check of contract $1 against provider $2.
SELECT id::text AS id, contract, contract_hash, provider,
       onejob_time(provider_updated_at) AS provider_updated_at, passed, samples::text AS samples,
       onejob_time(checked_at) AS checked_at
FROM contract_checks WHERE contract = $1 AND provider = $2 ORDER BY id DESC LIMIT 1
