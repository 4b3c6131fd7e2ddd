-- Adds token ?1 of owner ?2 (name ?3, hex SHA-256 ?4), stamped now; returns when.
INSERT INTO tokens (id, owner_id, name, sha256, created_at)
VALUES (?1, ?2, ?3, ?4, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
RETURNING created_at
