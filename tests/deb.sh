#!/usr/bin/env bash
# The .deb ships both binaries and a long description, installs, and works from /usr/bin:
# builds it, checks its contents and control fields, installs it with dpkg, runs the
# command line and opens the app's window from the installed files, and removes it again
# (also when a step fails). Prints how long each phase took.
#
# Needs root or sudo (dpkg -i), ui/dist, and what scripts/setup installs. Refuses to run
# when onejob is already installed, so it never removes someone's own installation.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"

fail() {
  echo "deb: FAIL: $*" >&2
  exit 1
}

phase_started=$SECONDS
phase_name=""
phase() {
  if [[ -n "$phase_name" ]]; then
    echo "deb: phase \"$phase_name\" took $((SECONDS - phase_started)) s"
  fi
  phase_name="$*"
  phase_started=$SECONDS
  [[ -z "$phase_name" ]] || printf '\ndeb: == %s\n' "$phase_name"
}

sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  sudo=(sudo)
fi

[[ -f "$root/ui/dist/index.html" ]] || fail "ui/dist is missing; build the UI first: (cd ui && npm run build)"
[[ -x "$root/packaging/node_modules/.bin/tauri" ]] || fail "the Tauri CLI is missing; run scripts/setup"
if dpkg -s onejob >/dev/null 2>&1; then
  fail "the onejob package is installed on this machine; this test installs and removes it, so remove it first: ${sudo[*]} dpkg -r onejob"
fi
for file in /usr/bin/onejob /usr/bin/onejob-app; do
  [[ ! -e "$file" ]] || fail "$file exists outside the package; this test would overwrite it"
done

phase "build the .deb (debug)"
# A debug bundle of the app binary already built (by scripts/test's tests step, or by
# tests/window_opens.sh): `tauri bundle` packs it as it is; scripts/test also hands over its
# command line (ONEJOB_STAGE_CLI_BINARY, see packaging/stage-cli.sh). Measured on two busy cores with the debug builds done: 14 s, plus about
# 35 s the first time for stage-cli.sh's `cargo build -p onejob` (built alone, the CLI's
# dependencies get other features than in the workspace's build). `tauri build --debug`
# took 95 s (it recompiles tauri and the app with the custom-protocol feature), and a
# release bundle (scripts/deb) compiles the whole tree again with optimisations: 16 min.
# The package's files, control fields and desktop entry are the same in every profile.
rm -rf "$target/debug/bundle/deb"
packaging/node_modules/.bin/tauri bundle --debug --bundles deb
shopt -s nullglob
debs=("$target"/debug/bundle/deb/*.deb)
shopt -u nullglob
((${#debs[@]} == 1)) || fail "expected one .deb in $target/debug/bundle/deb, found ${#debs[@]}"
deb="${debs[0]}"
echo "deb: built ${deb#"$root"/}"

phase "check its contents and description"
contents="$(dpkg -c "$deb")"
# Tauri's bundler writes member names without dpkg-deb's leading "./"; dpkg installs both alike.
for path in usr/bin/onejob-app usr/bin/onejob usr/share/applications/onejob.desktop; do
  grep -qE "[[:space:]](\./)?${path//./\\.}\$" <<<"$contents" || {
    echo "$contents" >&2
    fail "the .deb does not contain $path (contents above)"
  }
done
package="$(dpkg-deb -f "$deb" Package)"
description="$(dpkg-deb -f "$deb" Description)"
# The first line is the short description; the extended text follows, one space-indented line each.
long_lines="$(tail -n +2 <<<"$description" | grep -c '^ [^ ]' || true)"
((long_lines >= 3)) || fail "the long description has ${long_lines} lines, not 3 or more: $description"
grep -q "idempotency key" <<<"$description" || fail "the long description does not say what onejob does: $description"
if grep -qF "(none)" <<<"$description"; then
  fail "the long description is the bundler's placeholder: $description"
fi
echo "deb: package $package, description:"
echo "$description"

phase "install"
remove() {
  echo "deb: removing the package"
  "${sudo[@]}" dpkg -r "$package" >/dev/null || echo "deb: dpkg -r $package failed" >&2
}
trap remove EXIT
"${sudo[@]}" dpkg -i "$deb"
[[ -x /usr/bin/onejob && -x /usr/bin/onejob-app ]] || fail "dpkg -i did not install both binaries"

phase "the command line from /usr/bin"
scratch="$(mktemp -d)"
trap 'remove; rm -rf "$scratch"' EXIT
help="$(env -u ONEJOB_DB /usr/bin/onejob --help)" || fail "onejob --help failed"
grep -qF '$XDG_DATA_HOME/dev.onejob.app/onejob.db' <<<"$help" || fail "onejob --help does not name the app's database: $help"
providers="$(/usr/bin/onejob --db "$scratch/x.db" provider list)" || fail "onejob provider list failed"
grep -q '"sandbox"' <<<"$providers" || fail "a new database lists no sandbox provider: $providers"
echo "deb: onejob --help names the database; provider list: $providers"

phase "the app's window from /usr/bin"
tests/window_opens.sh /usr/bin/onejob-app "$root/artifacts/window-deb.png"

phase "remove"
trap 'rm -rf "$scratch"' EXIT
"${sudo[@]}" dpkg -r "$package"
[[ ! -e /usr/bin/onejob && ! -e /usr/bin/onejob-app ]] || fail "dpkg -r left a binary in /usr/bin"
phase ""
echo "deb: the package installs both binaries, both work, and it removes cleanly"
