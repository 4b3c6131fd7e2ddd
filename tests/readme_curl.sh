#!/usr/bin/env bash
# The curl session of the HTTP API's guide (docs/guide/http-api.md), word for word, against a
# real `onejob serve` on a ledger of its own: the commands between <!-- curl-session --> and
# <!-- /curl-session --> run one by one in this shell (the one change: a free port in place of
# 8787), and each one's output is checked. Then the systemd unit the guides point to
# (docs/guide/service.md) is checked with `systemd-analyze verify`, where systemd is installed.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/onejob_bin.sh"
guide="$root/docs/guide/http-api.md"

build_onejob_if_missing
for tool in curl jq python3; do
  command -v "$tool" >/dev/null || fail "$tool is needed (Debian: apt-get install $tool)"
done
curl --help all | grep -q -- '--json' || fail "curl is older than 7.82 and has no --json"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  stop_child "$server_pid" KILL
  rm -rf "$work"
}
trap cleanup EXIT

# A home, a ledger and `onejob` on PATH, all in the temporary folder.
mkdir -p "$work/bin"
ln -s "$onejob_bin" "$work/bin/onejob"
export PATH="$work/bin:$PATH" HOME="$work" XDG_DATA_HOME="$work/data" ONEJOB_DB="$work/onejob.db"
unset ONEJOB_OWNER
cd "$work"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

# The session's commands: continued lines joined, comment lines left out.
session="$(awk '/^<!-- curl-session -->$/ {on = 1; next} /^<!-- \/curl-session -->$/ {on = 0} on && !/^```/' "$guide")"
[[ -n "$session" ]] || fail "no curl session between the markers in ${guide#"$root"/}"
commands=()
current=""
while IFS= read -r line; do
  if [[ -z "$current" && ( "$line" =~ ^[[:space:]]*# || -z "${line//[[:space:]]/}" ) ]]; then
    continue
  fi
  if [[ "$line" == *\\ ]]; then
    current+="${line%\\} "
    continue
  fi
  commands+=("${current}${line//8787/$port}")
  current=""
done <<<"$session"
((${#commands[@]} == 10)) || fail "expected the 10 commands this test checks, found ${#commands[@]}: update both together"

# Runs command $1 of the session; its stdout in out.$1, stderr in err.$1, exit code in rc.$1.
run() {
  local i="$1" cmd="${commands[$1]}"
  echo "\$ $cmd"
  local rc=0
  eval "$cmd" >"$work/out.$i" 2>"$work/err.$i" || rc=$?
  echo "$rc" >"$work/rc.$i"
  if [[ "$cmd" =~ \&[[:space:]]*(#.*)?$ ]]; then
    server_pid=$!
  fi
  awk '{print "  " $0}' "$work/out.$i"
}
expect() { "$@" || fail "command $i (${commands[$i]}) printed: $(cat "$work/out.$i" "$work/err.$i")"; }
# The body of an `-i` response: what follows the blank line after the headers.
body() { tr -d '\r' <"$work/out.$1" | awk 'past {print} /^$/ {past = 1}'; }
has_header() { tr -d '\r' <"$work/out.$1" | grep -qix "$2"; }

# 0: the server, backgrounded; it says where it listens once it accepts connections.
i=0; run $i
for _ in $(seq 100); do
  [[ -s "$work/out.0" ]] && break
  sleep 0.1
done
expect [ "$(jq -r .listening "$work/out.0")" = "http://127.0.0.1:$port" ]

# 1-3: the token, the API's address and the intent.
for i in 1 2 3; do run $i; expect [ "$(cat "$work/rc.$i")" = 0 ]; done
i=1; expect [ "${TOKEN:0:3}" = oj_ ]

# 4: a new job, 201 with its Location.
i=4; run $i
expect grep -q '^HTTP/1.1 201 ' "$work/out.$i"
job_id="$(body $i | jq -r .job.id)"
expect [ "$(body $i | jq -r .replayed)" = false ]
expect has_header $i "location: /v1/jobs/$job_id"

# 5: the same again with the bare key: 200, the replay header, the same job.
i=5; run $i
expect grep -q '^HTTP/1.1 200 ' "$work/out.$i"
expect has_header $i 'idempotent-replayed: true'
expect [ "$(body $i | jq -r .replayed)" = true ]
expect [ "$(body $i | jq -r .job.id)" = "$job_id" ]

# 6: another intent under the key: 422 as problem+json, naming the job.
i=6; run $i
expect [ "$(jq -r .status "$work/out.$i")" = 422 ]
expect [ "$(jq -r .code "$work/out.$i")" = idempotency_conflict ]
expect [ "$(jq -r .details.existing_job_id "$work/out.$i")" = "$job_id" ]

# 7-8: the job found by its key, and its result once the sandbox has answered.
i=7; run $i
expect [ "$JOB" = "$job_id" ]
i=8; run $i
expect [ "$(sed -n 1p "$work/out.$i")" = '"succeeded"' ]
expect [ "$(sed -n 2p "$work/out.$i")" = '{"amount":100}' ]

# 9: SIGTERM; the server ends by itself with exit 0 and says it stopped.
i=9; run $i
server_rc=0
wait "$server_pid" || server_rc=$?
i=0
expect [ "$server_rc" = 0 ]
expect [ "$(tail -n1 "$work/out.0" | jq -r .served.stopped)" = true ]
server_pid=""
echo "readme_curl: the curl session of ${guide#"$root"/} ran as written"

# The systemd unit, with ExecStart pointed at this build (verify wants the binary to exist).
unit="$root/packaging/onejob-serve.service"
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$work/unit"
  sed "s#/usr/bin/onejob#$onejob_bin#" "$unit" >"$work/unit/onejob-serve.service"
  systemd-analyze verify "$work/unit/onejob-serve.service"
  echo "readme_curl: $(basename "$unit") passes systemd-analyze verify"
else
  echo "readme_curl: systemd-analyze is not installed; $(basename "$unit") not verified"
fi
