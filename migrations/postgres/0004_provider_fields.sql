-- Provider configurations hold only the closed set of fields (SPEC §12), as in the SQLite
-- ledger's 0006: one stored before the set was closed loses every other top-level field (a
-- pasted key, a header), which reading already ignored. Only such rows are rewritten, the
-- fields kept in their order, and their `updated_at` is kept: the provider works as before,
-- so its contract checks stay current. The list is `PROVIDER_FIELDS`
-- (crates/engine/src/providers/mod.rs); a test keeps the two equal.
WITH fields (key) AS (
    VALUES ('name'), ('kind'), ('base_url'), ('model'), ('api_key_env'), ('soft_timeout_ms'),
           ('hard_timeout_ms'), ('honours_idempotency_key'), ('status_url'), ('context_window'),
           ('supports_json_schema'), ('tokenizer'), ('anthropic_version'), ('dials')
),
kept (name, config) AS (
    SELECT p.name, json_object_agg(f.key, f.value ORDER BY f.n) FILTER (WHERE known.key IS NOT NULL)
    FROM providers AS p
    CROSS JOIN LATERAL json_each(p.config) WITH ORDINALITY AS f (key, value, n)
    LEFT JOIN fields AS known ON known.key = f.key
    GROUP BY p.name
    HAVING bool_or(known.key IS NULL)
)
UPDATE providers
SET config = COALESCE(kept.config, json_build_object())
FROM kept
WHERE providers.name = kept.name;
