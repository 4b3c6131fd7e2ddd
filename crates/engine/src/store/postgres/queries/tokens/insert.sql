-- Adds token $1 of owner $2 (name $3, hex SHA-256 $4), stamped now by the database's clock;
-- returns when.
INSERT INTO tokens (id, owner_id, name, sha256, created_at)
VALUES ($1::uuid, $2, $3, $4, onejob_now())
RETURNING onejob_time(created_at)
