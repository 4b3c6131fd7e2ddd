-- The owner's job by id, its intent and result measured here so that a large one never leaves
-- the database to be measured: each one's length in bytes (`json` keeps the text as given, so
-- it is the length SQLite measures), and its text whole when that is at most $3 bytes, else
-- only its first $4 characters. An id that is not a UUID names no job.
SELECT id::text AS id, owner_id, idempotency_key, fingerprint,
       octet_length(intent::text)::int8 AS intent_bytes,
       CASE WHEN octet_length(intent::text) <= $3 THEN intent::text ELSE left(intent::text, $4::int4) END AS intent_text,
       status, version, completed_by::text AS completed_by,
       octet_length(result::text)::int8 AS result_bytes,
       CASE WHEN octet_length(result::text) <= $3 THEN result::text ELSE left(result::text, $4::int4) END AS result_text,
       error::text AS error, flagged_for_review,
       onejob_time(created_at) AS created_at, onejob_time(updated_at) AS updated_at,
       onejob_time(finished_at) AS finished_at, onejob_time(not_before) AS not_before
FROM jobs WHERE id = onejob_uuid($1) AND owner_id = $2
