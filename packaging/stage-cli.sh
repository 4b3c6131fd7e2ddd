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

# A CLI binary already built from this tree may be handed over instead (tests/deb.sh gives the
# one its test run built): `cargo build -p onejob` alone resolves the CLI's dependencies with
# other features than a workspace build does, and compiles them all again.
if [[ -n "${ONEJOB_STAGE_CLI_BINARY:-}" ]]; then
  built="$ONEJOB_STAGE_CLI_BINARY"
  name="given"
  [[ -x "$built" ]] || {
    echo "stage-cli: ONEJOB_STAGE_CLI_BINARY=$built is not an executable" >&2
    exit 1
  }
else
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
fi

mkdir -p "$(dirname "$staged")"
cp -f "$built" "$staged"
echo "stage-cli: $name build ${built} -> packaging/bin/onejob"
