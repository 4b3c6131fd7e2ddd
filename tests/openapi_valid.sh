#!/usr/bin/env bash
# Validates the committed OpenAPI document (docs/openapi.json) with a third-party validator,
# @seriousme/openapi-schema-validator: the official OpenAPI 3.1 JSON Schema, with its JSON
# Schema 2020-12 dialect, and every $ref resolved. Then it shows that the validator catches a
# broken document: each copy below breaks one rule and must be refused.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
validator="$root/tests/openapi/node_modules/.bin/validate-api"
if [[ ! -x "$validator" ]]; then
  echo "openapi_valid: the validator is not installed: run scripts/setup" >&2
  exit 1
fi
document=docs/openapi.json
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

if ! "$validator" "$document" >"$scratch/out" 2>&1; then
  cat "$scratch/out" >&2
  echo "openapi_valid: FAILED: $document is not a valid OpenAPI document" >&2
  exit 1
fi
grep -q '"openapi": "3.1' "$document" || { echo "openapi_valid: FAILED: $document is not OpenAPI 3.1" >&2; exit 1; }

# name|python statement that breaks the document `d`
breaks=(
  'a response without its description|del d["paths"]["/v1/jobs"]["post"]["responses"]["201"]["description"]'
  'a reference to a schema that does not exist|d["paths"]["/v1/jobs"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"] = "#/components/schemas/NoSuchPage"'
  'a field an operation does not have|d["paths"]["/v1/jobs/{id}"]["get"]["answers"] = {}'
  'a parameter in no place|d["paths"]["/v1/jobs"]["post"]["parameters"][0]["in"] = "body"'
  'no info|del d["info"]'
)
for entry in "${breaks[@]}"; do
  name="${entry%%|*}"
  change="${entry#*|}"
  broken="$scratch/broken.json"
  python3 - "$document" "$broken" "$change" <<'PY'
import json, sys
source, target, change = sys.argv[1:]
with open(source) as f:
    d = json.load(f)
exec(change)
with open(target, "w") as f:
    json.dump(d, f, indent=2)
PY
  if "$validator" "$broken" >"$scratch/out" 2>&1; then
    echo "openapi_valid: FAILED: a document with $name passed the validator" >&2
    exit 1
  fi
  if ! grep -q '"valid": false' "$scratch/out"; then
    cat "$scratch/out" >&2
    echo "openapi_valid: FAILED: the validator did not run on the document with $name" >&2
    exit 1
  fi
  echo "openapi_valid: refused as it should: $name"
done
echo "openapi_valid: ok: $document is valid OpenAPI 3.1, and the validator refuses a broken copy"
