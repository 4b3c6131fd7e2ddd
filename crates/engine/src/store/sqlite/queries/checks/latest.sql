-- The last check of contract ?1 against provider ?2.
SELECT id, contract, contract_hash, provider, provider_updated_at, passed, samples, checked_at
FROM contract_checks WHERE contract = ?1 AND provider = ?2 ORDER BY id DESC LIMIT 1
