#!/usr/bin/env bash
# Runs test binaries, LANES (default 2) at a time, each in its package's folder as cargo runs
# it. LIST has one line per run: the package's folder, a tab, the executable, and optionally a
# tab and the arguments it is given, separated by spaces (a test filter such as `ledger::`), so
# one binary may run several times, each time on its own tests. A run's output is printed
# whole once it ends, so two never interleave; the run fails if any failed, and every one
# runs. Most of a suite's time is spent waiting (on the database, on timers), so a second lane
# fills the cores a single one leaves idle; each test makes a ledger of its own, so suites
# running side by side never share one.
#
#   tests/run_suites.sh LIST [LANES]
set -uo pipefail

list="$1"
lanes="${2:-2}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

one() {
  local dir="$1" exe="$2" log="$3" started=$SECONDS rc
  shift 3
  (cd "$dir" && CARGO_MANIFEST_DIR="$dir" "$exe" "$@" </dev/null) >"$log" 2>&1
  rc=$?
  echo "$rc" >"$log.rc"
  {
    flock 9
    printf '\n-- %s (%d s, exit %d)\n' "${exe##*/}${*:+ $*}" $((SECONDS - started)) "$rc"
    cat "$log"
  } 9>"$out/print.lock"
}

n=0
while IFS=$'\t' read -r dir exe args; do
  [[ -n "$exe" ]] || continue
  read -ra argv <<<"${args:-}"
  while (($(jobs -rp | wc -l) >= lanes)); do
    wait -n
  done
  n=$((n + 1))
  one "$dir" "$exe" "$out/$n.log" "${argv[@]}" &
done <"$list"
wait

failed=0
for i in $(seq "$n"); do
  [[ "$(cat "$out/$i.log.rc" 2>/dev/null)" == "0" ]] || failed=1
done
((n > 0)) || { echo "run_suites: $list names no test binary" >&2; exit 1; }
exit "$failed"
