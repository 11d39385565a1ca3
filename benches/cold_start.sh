#!/usr/bin/env bash
# Cold start (issue 32): wall time of the first `openfiles hook` from nothing running — no
# service manager, no XDG_RUNTIME_DIR, no service, a new HOME each run — for a Python file
# with an undefined name, with the real lsp plugin (ruff + pyright) and the default hook
# deadline. The hook starts the service itself (autostart), waits for its socket and for the
# problem. Prints each run and the p50 of all runs; a run whose feedback lacks the problem
# (the deadline came first) is reported as a miss.
#
# Run: cargo build --release --bin openfiles -p openfiles -p openfiles-plugin-lsp
#      benches/cold_start.sh [RUNS] (default 10; BIN=… and PLUGIN=… to measure other builds)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
bin="${BIN:-target/release/openfiles}"
plugin="${PLUGIN:-target/release/libopenfiles_plugin_lsp.so}"
bin="$(realpath "$bin")"
plugin="$(realpath "$plugin")"
times=()
misses=0
for i in $(seq 1 "$runs"); do
  dir="$(mktemp -d /tmp/of-cold.XXXXXX)"
  mkdir -p "$dir/home" "$dir/tmp" "$dir/proj/.git"
  printf 'def f():\n    return undefined_name\n' > "$dir/proj/m.py"
  payload="{\"cwd\":\"$dir/proj\",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$dir/proj/m.py\",\"content\":\"x\"}}"
  run() {
    env -u XDG_RUNTIME_DIR -u OPENFILES_SOCKET -u OPENFILES_CONFIG -u OPENFILES_STATE_DIR \
      -u OPENFILES_AUTOSTART -u XDG_CONFIG_HOME -u XDG_STATE_HOME -u NOTIFY_SOCKET -u RUST_LOG \
      HOME="$dir/home" TMPDIR="$dir/tmp" OPENFILES_PLUGIN_PATH="$plugin" "$bin" "$@"
  }
  start=$(date +%s%N)
  out="$(printf '%s' "$payload" | run hook --agent claude)"
  end=$(date +%s%N)
  ms=$(( (end - start) / 1000000 ))
  times+=("$ms")
  if [[ "$out" == *undefined_name* ]]; then
    echo "run $i: ${ms} ms"
  else
    misses=$((misses + 1))
    echo "run $i: ${ms} ms, no problem in the feedback: ${out:-<nothing>}"
  fi
  pid="$(run status --json 2>/dev/null | sed -n 's/^  "pid": \([0-9]*\),.*/\1/p')"
  if [[ -n "$pid" ]]; then
    kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  fi
  rm -rf "$dir"
done
if [[ ${#times[@]} -gt 0 ]]; then
  p50=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "cold start, first hook: p50 ${p50} ms over ${#times[@]} runs (${misses} without the problem)"
fi
[[ $misses -lt $runs ]]
