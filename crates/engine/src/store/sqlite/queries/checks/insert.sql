-- Appends a check, stamped now; returns when.
-- ?1 id, ?2 contract, ?3 its hash, ?4 provider, ?5 the provider's updated_at, ?6 passed, ?7 samples.
INSERT INTO contract_checks (id, contract, contract_hash, provider, provider_updated_at, passed, samples, checked_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
RETURNING checked_at
