-- The last check of contract ?1 against each provider it was checked with, by provider.
SELECT id, contract, contract_hash, provider, provider_updated_at, passed, samples, checked_at
FROM contract_checks c WHERE contract = ?1
  AND id = (SELECT max(id) FROM contract_checks WHERE contract = ?1 AND provider = c.provider)
ORDER BY provider
