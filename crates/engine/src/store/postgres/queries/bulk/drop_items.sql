-- Removes operation $1's set (before the operation itself, which it references).
DELETE FROM bulk_items WHERE operation_id = $1::uuid
