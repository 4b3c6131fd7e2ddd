-- Inserts contract $1 (schema $2, template $3, samples $4, all JSON text; hash $5) or
-- replaces it; updated_at moves only when the hash changes.
INSERT INTO contracts (name, schema, template, samples, hash, created_at, updated_at)
VALUES ($1, $2::json, $3::json, $4::json, $5, onejob_now(), onejob_now())
ON CONFLICT (name) DO UPDATE SET schema = excluded.schema, template = excluded.template,
    samples = excluded.samples, hash = excluded.hash,
    updated_at = CASE WHEN contracts.hash = excluded.hash THEN contracts.updated_at
                      ELSE excluded.updated_at END
