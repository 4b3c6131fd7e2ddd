#!/usr/bin/env bash
# The desktop app's benchmark: cold start to first paint (process start to the first job row
# on screen, or the first-run panel of an empty ledger), and the resident memory of the app and
# its WebKit processes after a few seconds idle; with 100,000 jobs and, as baselines measured
# in the same run, with none, and a bare window: the same Tauri and window configuration on an
# essentially empty page (src-tauri/bare_window.rs), which reports its first paint the same way.
# The bare window runs twice: with WebKit's defaults (the baseline of every ratio), and with the
# app's WebKit settings (src-tauri/webview.rs), the floor under the app's own cold start.
# Then the time to the Job screen: a second after the Jobs screen's first paint the app opens
# the ledger's one job, whose result is small or about 5 MB, and the time from asking to the Job
# screen's first paint of it is printed for both, with their ratio.
# Each case runs several times, the cases taking turns; it prints the medians, each beside its
# ratio to the bare window. Prints the figures; asserts nothing.
#
# Needs Xvfb and the tools scripts/setup installs; builds the UI and the release binaries when
# missing or stale. ONEJOB_BENCH_JOBS, ONEJOB_BENCH_IDLE_S and ONEJOB_BENCH_RUNS change the job
# count, the idle time and the runs per case. ONEJOB_BENCH_CASES picks the groups of cases:
# `start` (the cold starts and the bare window) and `job` (the Job screen), both by default. ONEJOB_BENCH_VARIANTS adds cases on the same
# ledger of jobs: each word is one environment assignment for the app (for instance
# ONEJOB_WEBVIEW=none for WebKit's own defaults, ONEJOB_WEBVIEW=no-jit for one setting,
# MALLOC_ARENA_MAX=2); the word `webview` stands for ONEJOB_WEBVIEW=none and each of the
# settings of src-tauri/webview.rs alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="${ONEJOB_BENCH_JOBS:-100000}"
idle_s="${ONEJOB_BENCH_IDLE_S:-5}"
runs="${ONEJOB_BENCH_RUNS:-3}"
cases=" ${ONEJOB_BENCH_CASES:-start job} "
timeout_s=120
# The one job of the Job screen's ledgers.
job_id="01900000-0000-7000-8000-000000000001"

variants=()
for word in ${ONEJOB_BENCH_VARIANTS:-}; do
  if [[ "$word" == webview ]]; then
    variants+=(ONEJOB_WEBVIEW=none)
    for setting in no-compositing no-dmabuf no-optimizing-jit no-jit; do
      variants+=("ONEJOB_WEBVIEW=$setting")
    done
  elif [[ "$word" == *=* ]]; then
    variants+=("$word")
  else
    echo "bench_app: ONEJOB_BENCH_VARIANTS: '$word' is neither VAR=VALUE nor 'webview'" >&2
    exit 2
  fi
done

[[ -f ui/dist/index.html ]] || (cd ui && npm ci --no-audit --no-fund && npm run build)
# The bare window is built only with the `bench` feature, which changes nothing in the app.
cargo build --release --locked -p onejob-app -p onejob --features onejob-app/bench
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
app="$target/release/onejob-app"
bare="$target/release/onejob-bare-window"
cli="$target/release/onejob"

scratch="$(mktemp -d)"
APP_PID=""
XVFB_PID=""
cleanup() {
  [[ -n "$APP_PID" ]] && { kill "$APP_PID" 2>/dev/null || true; wait "$APP_PID" 2>/dev/null || true; }
  [[ -n "$XVFB_PID" ]] && { kill "$XVFB_PID" 2>/dev/null || true; wait "$XVFB_PID" 2>/dev/null || true; }
  sleep 0.5; rm -rf "$scratch" 2>/dev/null || true
}
trap cleanup EXIT

# Xvfb picks a free display and writes its number on descriptor 3.
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$scratch/display" 2>/dev/null &
XVFB_PID=$!
for _ in $(seq 100); do [[ -s "$scratch/display" ]] && break; sleep 0.1; done
display=":$(tr -d '[:space:]' <"$scratch/display")"

# A data directory whose ledger holds `n` finished jobs, inserted in one statement (the same
# shape as the end-to-end tests' helper; far faster than `n` submits, and never executed). Each
# run starts from a fresh copy of it, as a first start would.
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
    FROM n;
    PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
}
# A data directory whose ledger holds one succeeded job with a result of about `bytes` bytes
# of compact JSON: rows of about 100 bytes, as a provider's list might answer.
seed_job() {
  local home="$1" bytes="$2"
  local db="$home/data/dev.onejob.app/onejob.db"
  seed "$home" 0
  python3 - "$db" "$bytes" "$job_id" <<'PY'
import json, sqlite3, sys
db, size, job = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [{"row": i, "sku": f"sku-{i:08d}", "text": "x" * 60} for i in range(max(1, size // 100))]
result = json.dumps({"rows": rows}, separators=(",", ":"))
now = "2026-01-01T00:00:00.000Z"
c = sqlite3.connect(db)
with c:
    c.execute("""INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status,
                   version, completed_by, result, created_at, updated_at, finished_at)
                 VALUES (?, 'local', 'seed-1', ?, '{"route":["sandbox"],"input":{}}', 'succeeded',
                   1, 'seeded', ?, ?, ?, ?)""", (job, "0" * 64, result, now, now, now))
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
c.close()
PY
}
has() { [[ "$cases" == *" $1 "* ]]; }
if has start; then
  seed "$scratch/ledger-empty" 0
  seed "$scratch/ledger-many" "$jobs"
fi
if has job; then
  seed_job "$scratch/ledger-job-small" 100
  seed_job "$scratch/ledger-job-large" 5000000
fi

# The process and everything it started (WebKit's web and network processes).
family() {
  echo "$1"
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do family "$child"; done
}

# Starts one case once: `measure CASE BINARY LEDGER [VAR=VALUE]`. Appends to the case's
# results one line: ms to first paint, total KiB, then `process=KiB` for each process.
measure() {
  local case="$1" binary="$2" ledger="$3" assignment="${4:-}"
  RUN=$((RUN + 1))
  local home="$scratch/run-$RUN"
  cp -a "$scratch/ledger-$ledger" "$home"
  local out="$home/app.out"
  : >"$out"
  local -a env_extra=()
  [[ -n "$assignment" ]] && env_extra=("$assignment")
  local start
  start="$(date +%s%3N)"
  env "${env_extra[@]}" ONEJOB_REPORT_FIRST_PAINT=1 DISPLAY="$display" GDK_BACKEND=x11 \
    XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" XDG_CACHE_HOME="$home/cache" \
    "$binary" >"$out" 2>"$home/app.err" &
  APP_PID=$!
  local painted=""
  for _ in $(seq $((timeout_s * 20))); do
    painted="$(awk '/^first-paint-epoch-ms / {print $2; exit}' "$out")"
    [[ -n "$painted" ]] && break
    kill -0 "$APP_PID" 2>/dev/null || { cat "$home/app.err" >&2; echo "bench_app: $case exited" >&2; exit 1; }
    sleep 0.05
  done
  [[ -n "$painted" ]] || { echo "bench_app: $case: no first paint within ${timeout_s}s" >&2; exit 1; }
  if [[ "$assignment" == ONEJOB_BENCH_OPEN_JOB=* ]]; then
    local opened="" shown=""
    for _ in $(seq $((timeout_s * 20))); do
      opened="$(awk '/^open-job-epoch-ms / {print $2; exit}' "$out")"
      shown="$(awk '/^job-paint-epoch-ms / {print $2; exit}' "$out")"
      [[ -n "$shown" ]] && break
      sleep 0.05
    done
    [[ -n "$opened" && -n "$shown" ]] || { echo "bench_app: $case: no Job screen within ${timeout_s}s" >&2; exit 1; }
    echo "$((shown - opened))" >>"$scratch/opened-$case"
  fi

  sleep "$idle_s"
  local total=0 pid kb comm detail="" first=1 pids
  pids="$(family "$APP_PID")"
  for pid in $pids; do
    kb="$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)"
    [[ -n "$kb" ]] || continue
    comm="$(cat "/proc/$pid/comm" 2>/dev/null || echo "?")"
    # The binary itself is "app" whichever it is, so the cases' columns line up.
    ((first)) && comm=app
    first=0
    total=$((total + kb))
    detail+=" $comm=$kb"
  done
  echo "$((painted - start)) $total$detail" >>"$scratch/results-$case"

  # The app and the WebKit processes it started, so none is left running into the next run.
  kill $pids 2>/dev/null || true
  wait "$APP_PID" 2>/dev/null || true
  APP_PID=""
}

RUN=0
for run in $(seq "$runs"); do
  if has start; then
    measure bare "$bare" empty
    measure bare-app "$bare" empty ONEJOB_WEBVIEW=default
    measure empty "$app" empty
    measure many "$app" many
    for i in "${!variants[@]}"; do measure "variant$i" "$app" many "${variants[$i]}"; done
  fi
  if has job; then
    measure job-small "$app" job-small "ONEJOB_BENCH_OPEN_JOB=$job_id"
    measure job-large "$app" job-large "ONEJOB_BENCH_OPEN_JOB=$job_id"
  fi
done

# The medians of each case, each beside its ratio to the bare window's; the Job screen's
# times beside each other.
python3 - "$scratch" "$jobs" "$idle_s" "$runs" "$cases" "${variants[@]}" <<'PY'
import statistics, sys

scratch, jobs, idle_s, runs, cases, variants = (sys.argv[1], int(sys.argv[2]), sys.argv[3],
                                                sys.argv[4], sys.argv[5].split(), sys.argv[6:])

def load(case):
    rows = []
    for line in open(f"{scratch}/results-{case}"):
        ms, total, *procs = line.split()
        per = {}
        for p in procs:
            name, kb = p.rsplit("=", 1)
            per[name] = per.get(name, 0) + int(kb)
        rows.append((int(ms), int(total), per))
    med = lambda xs: statistics.median(xs)
    names = sorted({n for _, _, per in rows for n in per}, key=lambda n: (n != "app", n))
    return (med([r[0] for r in rows]), med([r[1] for r in rows]) / 1024,
            {n: med([per.get(n, 0) for _, _, per in rows]) / 1024 for n in names})

print(f"medians of {runs} runs each")
if "job" in cases:
    opened = {case: statistics.median(int(line) for line in open(f"{scratch}/opened-{case}"))
              for case in ("job-small", "job-large")}
    small, large = opened["job-small"], opened["job-large"]
    print(f"time to the Job screen, a small result {small:6.0f} ms")
    print(f"time to the Job screen, a 5 MB result  {large:6.0f} ms (×{large / max(small, 1):.2f} the small one's)")
    for case in ("job-small", "job-large"):
        ms, mib, per = load(case)
        print(f"{case}: cold start to first paint {ms:.0f} ms, resident after the job and {idle_s}s idle {mib:.0f} MiB")
if "start" not in cases:
    sys.exit(0)

bare = load("bare")
labels = [("bare", "bare window", 0), ("bare-app", "bare window, app's WebKit", 0),
          ("empty", "app empty", 0), ("many", "app", jobs)]
labels += [(f"variant{i}", v, jobs) for i, v in enumerate(variants)]
print("(×N) is the ratio to the bare window's figure")
for case, label, n in labels:
    ms, mib, per = load(case)
    detail = " ".join(
        f"{name}={v:.0f}MiB" + ("" if case == "bare" or not bare[2].get(name) else f"(×{v / bare[2][name]:.2f})")
        for name, v in per.items())
    ratio = lambda a, b: "" if case == "bare" else f" (×{a / b:.2f})"
    print(f"{label:<32} jobs {n:6d}  cold start to first paint {ms:5.0f} ms{ratio(ms, bare[0]):<8}"
          f"  resident after {idle_s}s idle {mib:4.0f} MiB{ratio(mib, bare[1]):<8} ({detail})")
floor = load("bare-app")[0]
for case, label, n in labels[2:4]:
    ms = load(case)[0]
    print(f"{label} cold start beyond the bare window with the app's WebKit settings: "
          f"{ms - floor:+.0f} ms (×{ms / floor:.2f})")
PY
