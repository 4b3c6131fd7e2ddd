#!/usr/bin/env bash
# Tauri's beforeBundleCommand: builds the onejob command line in the profile being bundled
# and puts it where tauri.conf.json's bundle.linux.deb.files takes /usr/bin/onejob from.
# The bundler packs only the desktop package's own binary; the CLI is another crate.
# The Tauri CLI runs hooks in its app directory, the first one holding a package.json below
# tauri.conf.json's (in path order): this one, hence `bash stage-cli.sh` in the config.
# Nothing here depends on the working directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
staged="$root/packaging/bin/onejob"

# The Tauri CLI says which profile it bundles; a release bundle must not ship a debug CLI.
profile=(--release)
name=release
if [[ "${TAURI_ENV_DEBUG:-false}" == "true" ]]; then
  profile=()
  name=debug
fi

# Cargo names the executable it built, wherever the target directory is (CARGO_TARGET_DIR,
# .cargo/config or ./target).
built="$(
  cargo build -p onejob --locked "${profile[@]}" --manifest-path "$root/Cargo.toml" \
    --message-format=json-render-diagnostics |
    grep -o '"executable":"[^"]*/onejob"' | tail -n1 | cut -d'"' -f4
)"
[[ -x "$built" ]] || {
  echo "stage-cli: cargo did not report the onejob executable" >&2
  exit 1
}

mkdir -p "$(dirname "$staged")"
cp -f "$built" "$staged"
echo "stage-cli: $name build ${built} -> packaging/bin/onejob"
