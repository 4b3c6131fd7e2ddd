-- The provider's request id $1 and HTTP status $2 of attempt $3, as soon as headers arrive.
UPDATE attempts SET request_id = coalesce($1, request_id), http_status = coalesce($2, http_status)
WHERE id = onejob_uuid($3)
