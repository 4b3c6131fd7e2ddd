-- The built-in sandbox states how long it keeps an idempotency key (a day, as Stripe does), so
-- its `unknown` attempts are settled by keyed replay (SPEC §16) and a newcomer can watch one
-- settle by itself, offline; as in the SQLite ledger's 0009. Its keys live in the process that
-- runs it, and only that process replays to it. Only the provider as the ledger seeded it is
-- changed: named and of kind `sandbox`, running in process (no `base_url`), honouring keys, with
-- no retention of its own. Its `updated_at` is kept: it answers as before, so its contract
-- checks stay current.
UPDATE providers
SET config = (config::jsonb || jsonb_build_object('key_retention_s', 86400))::json
WHERE name = 'sandbox' AND kind = 'sandbox'
  AND config->>'base_url' IS NULL
  AND config->>'honours_idempotency_key' = 'true'
  AND config->>'key_retention_s' IS NULL;
