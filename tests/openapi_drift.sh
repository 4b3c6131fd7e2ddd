#!/usr/bin/env bash
# Shows that the OpenAPI drift check fails when the committed docs/openapi.json no longer
# matches the document the code describes: it stages a stale copy (as a commit that changed a
# type or a route without regenerating would leave it), runs the check exactly as scripts/test
# does and expects a failure that leaves the file alone; then runs it with ONEJOB_WRITE_OPENAPI
# set and expects the file rewritten to the current document. The file and the index are
# restored whatever happens.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
file=docs/openapi.json
backup="$(mktemp)"
log="$(mktemp)"
cp "$file" "$backup"
restore() {
  cp "$backup" "$file"
  git reset -q -- "$file"
  rm -f "$backup" "$log"
}
trap restore EXIT

# The whole workspace's lib tests, filtered to the one check, as scripts/test runs it.
check() { cargo test -q --workspace --lib --locked the_committed_openapi_document_is_current >"$log" 2>&1; }

sed -i 's/"title": "onejob HTTP API"/"title": "an API that is no longer"/' "$file"
git add -- "$file"
stale="$(cat "$file")"

if check; then
  echo "openapi_drift: FAILED: a stale $file went unnoticed" >&2
  exit 1
fi
if ! grep -q "docs/openapi.json is not the document the code describes" "$log"; then
  cat "$log" >&2
  echo "openapi_drift: FAILED: the check failed, but not on the drift" >&2
  exit 1
fi
if [[ "$(cat "$file")" != "$stale" ]]; then
  echo "openapi_drift: FAILED: the check changed $file without being asked to" >&2
  exit 1
fi
if ! ONEJOB_WRITE_OPENAPI=1 check; then
  cat "$log" >&2
  echo "openapi_drift: FAILED: the check with ONEJOB_WRITE_OPENAPI set did not pass" >&2
  exit 1
fi
if ! cmp -s "$file" "$backup"; then
  echo "openapi_drift: FAILED: ONEJOB_WRITE_OPENAPI did not rewrite $file to the current document" >&2
  exit 1
fi
echo "openapi_drift: ok: the check catches a document that drifted from the code, and rewrites it when asked"
