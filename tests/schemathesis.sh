#!/usr/bin/env bash
# Schemathesis (pinned in tests/schemathesis/requirements.txt, installed by scripts/setup)
# against a real `onejob serve` on a fresh ledger, with a token made by `onejob token create`:
# every answer to the requests it generates from docs/openapi.json must conform to the document
# (status, content type, headers, body schema), no input may get a 5xx, invalid input must be
# refused, and no operation may ignore the token. The ledger is a SQLite file, or a fresh
# database on the PostgreSQL server that ONEJOB_TEST_POSTGRES names (as with-postgres gives it).
#
# Options after `--` go to `schemathesis run` (e.g. `-- --max-examples 200`).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/onejob_bin.sh"
schemathesis="$root/tests/schemathesis/.venv/bin/schemathesis"

[[ -x "$schemathesis" ]] || fail "Schemathesis is not installed: run scripts/setup"
build_onejob_if_missing
extra=()
if [[ "${1:-}" == "--" ]]; then
  shift
  extra=("$@")
fi

work="$(mktemp -d)"
server_pid=""
database=""
cleanup() {
  stop_child "$server_pid" TERM
  if [[ -n "$database" ]]; then
    psql -q "$maintenance" -c "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

export HOME="$work" XDG_DATA_HOME="$work/data"
unset ONEJOB_OWNER
server="${ONEJOB_TEST_POSTGRES:-}"
if [[ -n "${server// /}" ]]; then
  # A server URL without a database (and perhaps ?options): a database of our own on it.
  base="${server%%\?*}"
  query=""
  [[ "$server" == *\?* ]] && query="?${server#*\?}"
  base="${base%/}"
  maintenance="$base/postgres$query"
  database="onejob_schemathesis_$$_$RANDOM"
  psql -q "$maintenance" -c "CREATE DATABASE \"$database\"" >/dev/null
  export ONEJOB_DB="$base/$database$query"
  backend=postgresql
else
  export ONEJOB_DB="$work/onejob.db"
  backend=sqlite
fi

# A provider for intents to name; with no worker nothing is ever sent to it.
"$onejob_bin" provider add --json '{"name": "primary", "kind": "http",
  "base_url": "http://127.0.0.1:9/echo", "soft_timeout_ms": 1000, "hard_timeout_ms": 5000,
  "honours_idempotency_key": false}' >/dev/null
token="$("$onejob_bin" token create --owner schemathesis --name schemathesis |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')"

"$onejob_bin" serve --listen 127.0.0.1:0 --no-worker >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
for _ in $(seq 100); do
  [[ -s "$work/serve.out" ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail "onejob serve stopped: $(cat "$work/serve.err")"
  sleep 0.1
done
url="$(python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["listening"])' <"$work/serve.out")"
echo "schemathesis: onejob serve at $url on $backend"

# Every check but positive_data_acceptance: the document gives each value's shape, and the
# server refuses with 400 what only the ledger can judge (a route naming a provider that does
# not exist, a feed position another ledger gave, a result given with a verdict other than
# succeeded), which a schema-valid request may well be. A stream answers its opening and then
# waits for events: the request timeout ends it. One worker: with two, Hypothesis's threads can
# parse source at the same time, and CPython before 3.11.8 shares the AST builder's recursion
# counter between threads (CPython issue 106905), so a run could fail with a SystemError of the
# tool's own that says nothing about onejob; two workers were no faster here (65 s either way).
status=0
# Its cache of crashes stays in the scratch folder, not in the work tree.
cd "$work"
"$schemathesis" run "$root/docs/openapi.json" \
  --url "$url" \
  --header "Authorization: Bearer $token" \
  --checks all \
  --exclude-checks positive_data_acceptance \
  --max-examples 30 \
  --seed 45 \
  --request-timeout 5 \
  --workers 1 \
  --suppress-health-check too_slow,filter_too_much \
  --no-color \
  "${extra[@]}" || status=$?

kill -0 "$server_pid" 2>/dev/null || fail "onejob serve died during the run: $(cat "$work/serve.err")"
if ((status != 0)); then
  fail "FAILED on $backend (exit $status): the failures above are answers that do not match docs/openapi.json, or 5xx"
fi
echo "schemathesis: passed on $backend"
