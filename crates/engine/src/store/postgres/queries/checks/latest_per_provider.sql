-- The last check of contract $1 against each provider it was checked with, by provider.
SELECT DISTINCT ON (provider) id::text AS id, contract, contract_hash, provider,
       onejob_time(provider_updated_at) AS provider_updated_at, passed, samples::text AS samples,
       onejob_time(checked_at) AS checked_at
FROM contract_checks WHERE contract = $1
ORDER BY provider, contract_checks.id DESC
