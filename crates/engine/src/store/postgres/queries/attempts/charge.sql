-- What attempt $4 is charged as it moves to `in_flight` (SPEC §17): its currency $1, the price
-- it is sent at $2 (JSON) and its worst case $3 in billionths.
-- Rows: the attempt as charged.
UPDATE attempts SET currency = $1, price = $2, worst_nanos = $3 WHERE id = onejob_uuid($4)
RETURNING {attempt_columns}
