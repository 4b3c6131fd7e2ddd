#!/usr/bin/env bash
# Shows that the bindings drift check fails when the committed ui/src/bindings.ts no longer
# matches the Rust types: it stages a stale copy (as a commit that changed a Rust type without
# regenerating would leave it), runs the check exactly as scripts/test does, and expects a
# failure. The file and the index are restored whatever happens.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
file=ui/src/bindings.ts
backup="$(mktemp)"
cp "$file" "$backup"
restore() {
  cp "$backup" "$file"
  git reset -q -- "$file"
  rm -f "$backup"
}
trap restore EXIT

printf '\nexport type NoLongerInRust = { gone: string };\n' >>"$file"
git add -- "$file"

# The whole workspace's lib tests, filtered to the one check, as scripts/test runs it: with
# -p onejob-app alone, the dependencies would get other features and build a second time.
cargo test -q --workspace --lib --locked bindings_are_current >/dev/null
if git diff --quiet -- "$file"; then
  echo "bindings_drift: FAILED: a stale ui/src/bindings.ts went unnoticed" >&2
  exit 1
fi
echo "bindings_drift: ok: the check catches bindings that drifted from the Rust types"
