#!/usr/bin/env bash
# cargo's runner for the test binaries of `scripts/test.sh` (its `CARGO_TARGET_<host>_RUNNER`):
# runs the plugins' integration-test binaries beside the service crate's, instead of one after
# the other. Most of their tests wait on real servers (ruff, pyright, tsc, clangd…), not on the
# CPU: about 130 s of them, one after another, behind the service's 250 s.
#
# `$OPENFILES_TEST_BESIDE` is a folder test.sh fills before `cargo test`: `lead` holds the
# service's `it` binary; `list` the binaries to run beside it, one a line (`BINARY<TAB>PACKAGE
# DIR<TAB>PACKAGE NAME`), heaviest first. When cargo runs the lead, this starts the list, one
# binary after another (so at most twice `RUST_TEST_THREADS` tests at a time), each into its own
# `.out` and `.rc`, with the arguments cargo gave the lead; when cargo then reaches a listed
# binary, this waits for its run to end and replays its output and its exit status, so cargo's
# lines ("Running", "test result", "to rerun pass") and test.sh's count and reruns stay as they
# were. Anything else, and every binary when the lead was not run (a `-p` that leaves it out),
# runs as cargo asked.
set -uo pipefail
exe="$1"
shift
dir="${OPENFILES_TEST_BESIDE:-}"
if [ -z "$dir" ] || [ ! -f "$dir/lead" ]; then exec "$exe" "$@"; fi
if [ "$exe" = "$(cat "$dir/lead")" ]; then
  # The listed binaries run where cargo would run them (their package's folder, its manifest
  # variables); the rest of the environment is the one cargo gave the lead.
  (
    while IFS=$'\t' read -r bin pkg_dir pkg_name; do
      out="$dir/$(basename "$bin")"
      (
        cd "$pkg_dir" &&
          CARGO_MANIFEST_DIR="$pkg_dir" CARGO_MANIFEST_PATH="$pkg_dir/Cargo.toml" \
            CARGO_PKG_NAME="$pkg_name" exec "$bin" "$@"
      ) >"$out.out" 2>&1
      echo "$?" >"$out.rc.tmp" && mv "$out.rc.tmp" "$out.rc"
    done <"$dir/list"
  ) </dev/null >/dev/null 2>&1 &
  echo "$!" >"$dir/beside.pid"
  exec "$exe" "$@"
fi
out="$dir/$(basename "$exe")"
if [ -f "$dir/beside.pid" ] && cut -f1 "$dir/list" | grep -qxF "$exe"; then
  # Its run ends with its `.rc`; a chain that died without one (killed) leaves it to cargo's way.
  while [ ! -f "$out.rc" ] && kill -0 "$(cat "$dir/beside.pid")" 2>/dev/null; do sleep 0.2; done
  if [ -f "$out.rc" ]; then
    cat "$out.out"
    exit "$(cat "$out.rc")"
  fi
fi
exec "$exe" "$@"
