-- Removes operation $1, whose set is gone.
DELETE FROM bulk_operations WHERE id = $1::uuid
