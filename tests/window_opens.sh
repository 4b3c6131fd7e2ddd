#!/usr/bin/env bash
# The built app opens a window titled "onejob" that renders the UI, and creates its database
# in the user's data directory. Leaves a screenshot in artifacts/window.png.
#
#   tests/window_opens.sh                       the workspace's debug build, built here when stale
#   tests/window_opens.sh BINARY [SCREENSHOT]   an app binary as it is, e.g. /usr/bin/onejob-app
#
# Needs: the built UI in ui/dist (bash scripts/app builds it) and the X tools that
# scripts/setup installs.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The run inside Xvfb gets the binary and screenshot through the environment.
binary="${WINDOW_OPENS_BINARY:-}"
shot="${WINDOW_OPENS_SHOT:-$root/artifacts/window.png}"
timeout_s=90

fail() {
  echo "window_opens: FAIL: $*" >&2
  exit 1
}

# Stops the app (politely, then not) and reaps it, so no zombie is left behind.
stop_app() {
  [[ -n "${APP_PID:-}" ]] || return 0
  if kill -0 "$APP_PID" 2>/dev/null; then
    kill -TERM "$APP_PID" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$APP_PID" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$APP_PID" 2>/dev/null || true
  fi
  wait "$APP_PID" 2>/dev/null || true
  APP_PID=""
}

# Runs inside Xvfb: start the app, wait for its window and database, take the screenshot.
inside() {
  local db="$XDG_DATA_HOME/dev.onejob.app/onejob.db"
  local log="$SCRATCH/app.log"
  "$binary" >"$log" 2>&1 &
  APP_PID=$!
  trap stop_app EXIT

  local deadline=$((SECONDS + timeout_s)) window="" colours=0
  while ((SECONDS < deadline)); do
    if ! kill -0 "$APP_PID" 2>/dev/null; then
      cat "$log" >&2
      fail "the app exited before its window rendered (log above)"
    fi
    if [[ -z "$window" ]]; then
      window="$(xdotool search --onlyvisible --name '^onejob$' 2>/dev/null | head -n1 || true)"
    fi
    if [[ -n "$window" && -f "$db" ]]; then
      # A page that rendered has text, so many colours; a blank or unloaded one has one or two.
      if import -window "$window" "$shot" 2>/dev/null; then
        colours="$(identify -format '%k' "$shot" 2>/dev/null || echo 0)"
        if ((colours > 16)); then
          break
        fi
      fi
    fi
    sleep 1
  done

  stop_app
  trap - EXIT
  [[ -n "$window" ]] || fail "no visible window titled \"onejob\" within ${timeout_s}s"
  [[ -f "$db" ]] || fail "the database $db was not created within ${timeout_s}s"
  ((colours > 16)) || fail "the window stayed blank for ${timeout_s}s (${colours} colours; see $shot)"
  echo "window_opens: window \"onejob\" rendered (${colours} colours), database at $db"
}

if [[ "${1:-}" == "--inside" ]]; then
  inside
  exit 0
fi

if [[ $# -gt 0 ]]; then
  binary="$1"
  [[ $# -lt 2 ]] || shot="$(realpath -m "$2")"
  [[ -x "$binary" ]] || fail "$binary is not an executable"
else
  [[ -f "$root/ui/dist/index.html" ]] || fail "ui/dist is missing; build the UI first: (cd ui && npm run build)"
  # Builds the binary if needed (a no-op when it is current), so the test never runs stale code.
  cargo build --quiet -p onejob-app --manifest-path "$root/Cargo.toml" || fail "cargo build -p onejob-app failed"
  # Cargo's target directory may be elsewhere (CARGO_TARGET_DIR).
  binary="${CARGO_TARGET_DIR:-$root/target}/debug/onejob-app"
  [[ -x "$binary" ]] || fail "$binary is missing after the build"
fi
export WINDOW_OPENS_BINARY="$binary" WINDOW_OPENS_SHOT="$shot"
for tool in xvfb-run xdotool import identify; do
  command -v "$tool" >/dev/null || fail "$tool is missing; install it with: bash scripts/setup"
done

SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
export SCRATCH
# A fresh home for the app's data, config and cache: the test never touches the user's.
export XDG_DATA_HOME="$SCRATCH/data" XDG_CONFIG_HOME="$SCRATCH/config" XDG_CACHE_HOME="$SCRATCH/cache"
mkdir -p "$XDG_DATA_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$(dirname "$shot")"
rm -f "$shot"

xvfb-run -a --server-args="-screen 0 1280x800x24" bash "${BASH_SOURCE[0]}" --inside
echo "window_opens: $binary rendered; screenshot in ${shot#"$root"/}"
