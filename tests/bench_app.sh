#!/usr/bin/env bash
# The desktop app's benchmark: cold start to first paint (process start to the first job row
# on screen, or the first-run panel of an empty ledger), and the resident memory of the app and
# its WebKit processes after a few seconds idle; with 100,000 jobs and, as a baseline measured
# in the same run, with none. Prints the figures; asserts nothing.
#
# Needs Xvfb and the tools scripts/setup installs; builds the UI and the release binaries when
# missing or stale. ONEJOB_BENCH_JOBS and ONEJOB_BENCH_IDLE_S change the job count and idle time.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="${ONEJOB_BENCH_JOBS:-100000}"
idle_s="${ONEJOB_BENCH_IDLE_S:-5}"
timeout_s=120

[[ -f ui/dist/index.html ]] || (cd ui && npm ci --no-audit --no-fund && npm run build)
cargo build --release --locked -p onejob-app -p onejob
app="$root/target/release/onejob-app"
cli="$root/target/release/onejob"

scratch="$(mktemp -d)"
APP_PID=""
XVFB_PID=""
cleanup() {
  [[ -n "$APP_PID" ]] && { kill "$APP_PID" 2>/dev/null || true; wait "$APP_PID" 2>/dev/null || true; }
  [[ -n "$XVFB_PID" ]] && { kill "$XVFB_PID" 2>/dev/null || true; wait "$XVFB_PID" 2>/dev/null || true; }
  rm -rf "$scratch"
}
trap cleanup EXIT

# Xvfb picks a free display and writes its number on descriptor 3.
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$scratch/display" 2>/dev/null &
XVFB_PID=$!
for _ in $(seq 100); do [[ -s "$scratch/display" ]] && break; sleep 0.1; done
display=":$(tr -d '[:space:]' <"$scratch/display")"

# A fresh data directory whose ledger holds `n` finished jobs, inserted in one statement (the
# same shape as the end-to-end tests' helper; far faster than `n` submits, and never executed).
seed() {
  local home="$1" n="$2"
  local db="$home/data/dev.onejob.app/onejob.db"
  mkdir -p "$(dirname "$db")"
  ONEJOB_DB="$db" "$cli" jobs >/dev/null
  ((n == 0)) && return 0
  sqlite3 "$db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $n)
    INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version,
                      error, created_at, updated_at, finished_at)
    SELECT printf('01900000-0000-7000-8000-%012d', i), 'local', 'seed-' || i,
           printf('%064d', i), '{\"route\":[\"sandbox\"],\"input\":{\"n\":' || i || '}}',
           'cancelled', 1, '{\"code\":\"cancelled\",\"message\":\"seeded\"}',
           strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
           strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    FROM n;"
}

# The process and everything it started (WebKit's web and network processes).
family() {
  echo "$1"
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do family "$child"; done
}

# Starts the app on a ledger of `n` jobs and prints its figures.
measure() {
  local name="$1" n="$2"
  local home="$scratch/$name"
  seed "$home" "$n"
  local out="$home/app.out"
  local start
  start="$(date +%s%3N)"
  ONEJOB_REPORT_FIRST_PAINT=1 DISPLAY="$display" GDK_BACKEND=x11 \
    XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" XDG_CACHE_HOME="$home/cache" \
    "$app" >"$out" 2>"$home/app.err" &
  APP_PID=$!
  local painted=""
  for _ in $(seq $((timeout_s * 20))); do
    painted="$(awk '/^first-paint-epoch-ms / {print $2; exit}' "$out")"
    [[ -n "$painted" ]] && break
    kill -0 "$APP_PID" 2>/dev/null || { cat "$home/app.err" >&2; echo "bench_app: the app exited" >&2; exit 1; }
    sleep 0.05
  done
  [[ -n "$painted" ]] || { echo "bench_app: no first paint within ${timeout_s}s" >&2; exit 1; }

  sleep "$idle_s"
  local total=0 pid kb comm detail=""
  for pid in $(family "$APP_PID"); do
    kb="$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)"
    [[ -n "$kb" ]] || continue
    comm="$(cat "/proc/$pid/comm" 2>/dev/null || echo "?")"
    total=$((total + kb))
    detail+=" $comm=$((kb / 1024))MiB"
  done
  printf '%-12s jobs %6d  cold start to first paint %5d ms  resident after %ss idle %4d MiB (%s)\n' \
    "$name" "$n" "$((painted - start))" "$idle_s" "$((total / 1024))" "${detail# }"

  kill "$APP_PID" 2>/dev/null || true
  wait "$APP_PID" 2>/dev/null || true
  APP_PID=""
}

measure empty 0
measure many "$jobs"
