-- Provider configurations hold only the closed set of fields (SPEC §12): one stored before the
-- set was closed loses every other top-level field (a pasted key, a header), which reading
-- already ignored. Only such rows are rewritten, and their `updated_at` is kept: the provider
-- works as before, so its contract checks stay current. The list is `PROVIDER_FIELDS`
-- (crates/engine/src/providers/mod.rs); a test keeps the two equal.
WITH fields (key) AS (
    VALUES ('name'), ('kind'), ('base_url'), ('model'), ('api_key_env'), ('soft_timeout_ms'),
           ('hard_timeout_ms'), ('honours_idempotency_key'), ('status_url'), ('context_window'),
           ('supports_json_schema'), ('tokenizer'), ('anthropic_version'), ('dials')
),
-- A merge patch with each unknown field set to null removes exactly those fields.
unknown (name, patch) AS (
    SELECT p.name, json_group_object(f.key, NULL)
    FROM providers AS p, json_each(p.config) AS f
    WHERE f.key NOT IN (SELECT key FROM fields)
    GROUP BY p.name
)
UPDATE providers
SET config = json_patch(providers.config, unknown.patch)
FROM unknown
WHERE providers.name = unknown.name;
