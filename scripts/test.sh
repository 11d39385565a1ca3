#!/usr/bin/env bash
# The one command that runs the whole test suite on a fresh machine:
# installs every test dependency (idempotently), then runs the tests of every crate
# (unit, integration and doc tests; benchmarks are run separately with `cargo bench`).
# Every test binary runs whatever fails before it (`--no-fail-fast`), and the closing line
# counts them all. Extra arguments go to `cargo test`.
#
# A first run on a fresh 2-core machine costs about 4 min of installs (apt, pip, npm: the
# language servers and the five agent CLIs, 1.4 GB) and 3 min of compiling before the
# tests; a second run only the tests (see README.md, "Two commands").
set -euo pipefail
cd "$(dirname "$0")/.."
# The build starts beside the installs: they wait on the network, it on the CPU.
build_log="$(mktemp)"
log="$(mktemp)"
trap 'rm -f "$log" "$build_log"' EXIT
export OPENFILES_AUTOSTART=0   # no test starts a service by accident (`crate::autostart`); the tests of it turn it on
( cargo test --workspace --no-run "$@" >"$build_log" 2>&1 ) &
build_pid=$!
./scripts/install-test-deps.sh
build_status=0
wait "$build_pid" || build_status=$?
cat "$build_log"
if [ "$build_status" != 0 ]; then
  echo "0 passed, 1 failed"
  echo "test.sh: the build failed (above)" >&2
  exit "$build_status"
fi
status=0
cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?
# One closing line over every test binary: "N passed, N failed". A binary that ended
# without its summary line (a crash, a signal) counts as one failed test, so the count never
# hides it.
awk -v status="$status" '
  /^test result:/ { p += $4; f += $6; if ($3 == "FAILED.") summarised += 1; next }
  /^error: test failed, to rerun pass/ { failed_bins += 1 }
  END {
    if (failed_bins > summarised) f += failed_bins - summarised
    if (status != 0 && f == 0) f = 1
    printf "%d passed, %d failed\n", p, f
  }' "$log"
exit "$status"
