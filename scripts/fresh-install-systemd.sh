#!/usr/bin/env bash
# docs/INSTALL.md's source path ("Other Linux": scripts/install.sh) from a fresh clone, under a
# real but private `systemd --user` (its own mount namespace, as tests/it/packaging_systemd.rs
# does), as a new user would follow it: install, service status, hooks install in a new Rust
# project, the agent's hook command on an edit with a type error (socket activation, cargo
# check, feedback), doctor, reload, status, service uninstall --now.
#
#   sudo scripts/fresh-install-systemd.sh [REPO]     # REPO: what to clone [default: this checkout]
#
# Needs root (unshare -m), systemd, git, python3 and cargo. Everything lives in a temporary
# folder (HOME, XDG_RUNTIME_DIR, the clone); the release build goes to CARGO_TARGET_DIR
# [default: REPO/target], so a second run does not rebuild. Exit status 1 when a step did not
# do what INSTALL.md says; the transcript is on stdout.
set -uo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
[ "$(id -u)" = 0 ] || { echo "fresh-install-systemd.sh: needs root (unshare -m)" >&2; exit 2; }
base="$(mktemp -d /tmp/openfiles-fresh.XXXXXX)"
mkdir -p "$base/home" && mkdir -m 700 "$base/run"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
export HOME="$base/home" XDG_RUNTIME_DIR="$base/run" XDG_CONFIG_HOME="$base/home/.config"
unset DBUS_SESSION_BUS_ADDRESS OPENFILES_SOCKET OPENFILES_CONFIG OPENFILES_STATE_DIR OPENFILES_PLUGIN_PATH
failed=0
step() { echo; echo "\$ $*"; }
bad() { echo "!! $*"; failed=1; }

step git clone "$repo" "$base/src"
git clone -q "$repo" "$base/src" && git -C "$base/src" log --oneline -1 || exit 1
unshare -m --propagation private -- sh -c 'mount -t tmpfs tmpfs /run/systemd && mkdir -p /run/systemd/system && exec /lib/systemd/systemd --user' >/dev/null 2>&1 &
mgr=$!
trap 'kill "$mgr" 2>/dev/null; wait "$mgr" 2>/dev/null; rm -rf "$base"' EXIT
# nsenter does not keep the working folder: every command runs from $PWD explicitly.
in_ns() { nsenter -t "$mgr" -m -- sh -c 'cd "$0" && exec "$@"' "$PWD" "$@"; }
for _ in $(seq 1 150); do
  s=$(in_ns systemctl --user is-system-running 2>/dev/null)
  [ "$s" = running ] || [ "$s" = degraded ] && break
  sleep 0.2
done
step systemctl --user is-system-running
in_ns systemctl --user is-system-running || bad "the user manager did not start"

cd "$base/src"
step scripts/install.sh
in_ns scripts/install.sh 2>&1 | grep -v '^ *Compiling ' || true
of="$HOME/.local/bin/openfiles"
[ -x "$of" ] || { bad "no $of"; exit 1; }
step openfiles service status
in_ns "$of" service status || bad "service status"
step systemctl --user is-active openfiles.socket
in_ns systemctl --user is-active openfiles.socket || bad "the socket is not listening"

mkdir -p "$HOME/proj/src" && cd "$HOME/proj" && git init -q
printf '[package]\nname = "proj"\nversion = "0.1.0"\nedition = "2021"\n' > Cargo.toml
printf 'fn main() {\n    let x: u32 = "not a number";\n    println!("{x}");\n}\n' > src/main.rs
step openfiles hooks install --agent claude
in_ns "$of" hooks install --agent claude || bad "hooks install"
cmd=$(python3 -c 'import json;print(json.load(open(".claude/settings.local.json"))["hooks"]["PostToolUse"][0]["hooks"][0]["command"])')
step "sh -c '$cmd' < {PostToolUse Edit src/main.rs}   # what Claude Code runs"
payload=$(printf '{"hook_event_name":"PostToolUse","tool_name":"Edit","tool_input":{"file_path":"%s"},"cwd":"%s"}' "$HOME/proj/src/main.rs" "$HOME/proj")
start=$(date +%s%N)
out=$(printf '%s' "$payload" | in_ns sh -c "$cmd")
echo "$out"
echo "(answered in $(( ($(date +%s%N) - start) / 1000000 )) ms, socket activation and the first cargo check included)"
case "$out" in *"mismatched types"*) ;; *) bad "the hook did not hand back the type error" ;; esac
step systemctl --user is-active openfiles.service
in_ns systemctl --user is-active openfiles.service || bad "the service was not started by the hook"
step openfiles doctor
in_ns "$of" doctor || bad "doctor found a problem"
step systemctl --user reload openfiles
in_ns systemctl --user reload openfiles || bad "reload"
step openfiles status
in_ns "$of" status || bad "status"
step openfiles service uninstall --now
in_ns "$of" service uninstall --now || bad "service uninstall"
step systemctl --user is-active openfiles.socket openfiles.service
if in_ns systemctl --user is-active openfiles.socket openfiles.service; then bad "still active"; fi
[ ! -e "$XDG_CONFIG_HOME/systemd/user/openfiles.socket" ] || bad "units left behind"
echo
[ "$failed" = 0 ] && echo "fresh install: every step did what INSTALL.md says" || echo "fresh install: FAILED (see !! above)"
exit "$failed"
