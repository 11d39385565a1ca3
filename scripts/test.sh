#!/usr/bin/env bash
# The one command that runs the whole test suite on a fresh machine:
# installs every test dependency (idempotently), then runs the tests of every crate
# (unit, integration and doc tests; benchmarks are run separately with `cargo bench`).
# Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-test-deps.sh
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
# No test starts a service by accident (`crate::autostart`); the tests of it turn it on.
export OPENFILES_AUTOSTART=0
cargo test --workspace "$@" 2>&1 | tee "$log" || status=$?
# One closing line over every test binary: "N passed, N failed".
awk '/^test result:/ { p += $4; f += $6 } END { printf "%d passed, %d failed\n", p, f }' "$log"
exit "$status"
