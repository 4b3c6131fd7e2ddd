-- Inserts provider ?1 (kind ?2, config ?3 as JSON text) or replaces it; says whether it existed.
INSERT INTO providers (name, kind, config, created_at, updated_at) VALUES (?1, ?2, ?3, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, config = excluded.config,
    updated_at = excluded.updated_at
RETURNING created_at <> updated_at
