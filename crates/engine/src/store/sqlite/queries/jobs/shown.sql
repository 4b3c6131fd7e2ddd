-- The owner's job by id, its intent and result measured here so that a large one never leaves
-- the database to be measured: each one's length in bytes, and its text whole when that is at
-- most ?3 bytes, else only its first ?4 characters.
SELECT id, owner_id, idempotency_key, fingerprint,
       length(CAST(intent AS BLOB)) AS intent_bytes,
       CASE WHEN length(CAST(intent AS BLOB)) <= ?3 THEN intent ELSE substr(intent, 1, ?4) END AS intent_text,
       status, version, completed_by,
       length(CAST(result AS BLOB)) AS result_bytes,
       CASE WHEN length(CAST(result AS BLOB)) <= ?3 THEN result ELSE substr(result, 1, ?4) END AS result_text,
       error, flagged_for_review, created_at, updated_at, finished_at, not_before
FROM jobs WHERE id = ?1 AND owner_id = ?2
