# shellcheck shell=bash
# Sourced by the test scripts that run a real `onejob` (readme_curl.sh, schemathesis.sh):
# `root`, `target` and `onejob_bin`, the binary under test (ONEJOB_BIN, or the workspace's debug
# build), and the helpers below.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
onejob_bin="${ONEJOB_BIN:-$target/debug/onejob}"

# Ends the script, its name in front of the message.
fail() { echo "$(basename "$0" .sh): $*" >&2; exit 1; }

# Builds the debug binary when `onejob_bin` is not there yet.
build_onejob_if_missing() {
  if [[ ! -x "$onejob_bin" ]]; then
    cargo build --quiet --locked -p onejob --manifest-path "$root/Cargo.toml"
  fi
}

# Sends the signal $2 (TERM, KILL) to the child $1 if it still runs, and reaps it.
stop_child() {
  if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
    kill "-$2" "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
