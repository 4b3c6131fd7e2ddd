-- Inserts provider $1 (kind $2, config $3 as JSON text) or replaces it; says whether it existed
-- (an updated row version has a deleting transaction, xmax, of its old version).
INSERT INTO providers (name, kind, config, created_at, updated_at)
VALUES ($1, $2, $3::json, onejob_now(), onejob_now())
ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, config = excluded.config,
    updated_at = excluded.updated_at
RETURNING xmax <> 0
