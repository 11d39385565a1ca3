#!/usr/bin/env bash
# Side-by-side Claws figures: the editor extension's own server (run headless by
# scripts/claws-suite/reference-server.js) and `openfiles claws serve`, each probed by
# claws_probe.py (any claws/1 server: list round trip, create → first echo, send → echo in
# readLog, capture MB/s, exec) in alternating runs, on the same machine at the same time.
#
#   scripts/claws-side-by-side.sh CLAWS PROBE [OPENFILES_BIN] [RUNS]
#
# CLAWS: the Claws repository (neunaha/claws, v0.7.14), a checkout or its bare git directory
# (read at HEAD); its extension/src is compiled with `tsc` (type errors for the missing
# `vscode`/node typings are expected: the JavaScript is emitted all the same). PROBE:
# claws_probe.py. NODE_PATH must reach the extension's dependencies `zod` and `node-pty`
# (e.g. a folder with `zod` and `@lydell/node-pty` linked as `node-pty`). Shells of both
# servers start with the same empty $HOME. Prints one line per server and run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
claws="${1:?usage: $0 CLAWS PROBE [OPENFILES_BIN] [RUNS]}"
probe="${2:?usage: $0 CLAWS PROBE [OPENFILES_BIN] [RUNS]}"
bin="${3:-$here/../target/release/openfiles}"
runs="${4:-3}"
tmp="$(mktemp -d)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ref" "$tmp/home" "$tmp/ref-ws" "$tmp/of-ws"
if [ -d "$claws/extension" ]; then
  cp -r "$claws/extension/src" "$claws/extension/tsconfig.json" "$tmp/ref/"
else
  git --git-dir="$claws" archive HEAD extension/src extension/tsconfig.json 2>"$tmp/archive.log" |
    tar -x -C "$tmp/ref" --strip-components=1
fi
tsc -p "$tmp/ref" --outDir "$tmp/ref/dist" --noEmitOnError false >/dev/null || true
[ -f "$tmp/ref/dist/extension.js" ] || { echo "tsc emitted no extension.js" >&2; exit 2; }
HOME="$tmp/home" setsid node "$here/claws-suite/reference-server.js" "$tmp/ref" "$tmp/ref-ws" \
  </dev/null >/dev/null 2>"$tmp/ref.log" &
pids+=($!)
HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" OPENFILES_STATE_DIR="$tmp/state" \
  OPENFILES_AUTOSTART=0 setsid "$bin" claws serve "$tmp/of-ws" </dev/null >/dev/null 2>"$tmp/of.log" &
pids+=($!)
for sock in "$tmp/ref-ws/.claws/claws.sock" "$tmp/of-ws/.claws/claws.sock"; do
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
  [ -S "$sock" ] || { echo "no server at $sock" >&2; cat "$tmp/ref.log" "$tmp/of.log" >&2; exit 2; }
done
for r in $(seq "$runs"); do
  echo "reference run $r: $(python3 "$probe" "$tmp/ref-ws/.claws/claws.sock")"
  echo "openfiles run $r: $(python3 "$probe" "$tmp/of-ws/.claws/claws.sock")"
done
