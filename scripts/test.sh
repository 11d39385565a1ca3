#!/usr/bin/env bash
# The one command that runs the whole test suite on a fresh machine:
# installs every test dependency (idempotently), then runs the tests of every crate.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-test-deps.sh
cargo test --workspace --all-targets "$@"
