#!/usr/bin/env bash
# The one command that runs the whole test suite on a fresh machine:
# installs every test dependency (idempotently), then runs the tests of every crate
# (unit, integration and doc tests; benchmarks are run separately with `cargo bench`).
# Every test binary runs whatever fails before it (`--no-fail-fast`); the plugins'
# integration-test binaries run beside the service crate's (`scripts/test-runner.sh`); a failed
# test runs once more alone (one that then passes is named as flaky), and the closing line
# counts them all.
# Extra arguments go to `cargo test`.
#
# A first run on a fresh 2-core machine: about 2 min of installs (apt, pip, npm: the language
# servers and the five agent CLIs, 1.4 GB) beside the build (about 4 min from an empty cargo
# cache), then about 4-5 min of tests (see README.md, "Two commands").
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's end, wall clock and seconds since the script began (`.ci/run` says its own).
phase() { echo "test.sh: $(date -u +%H:%M:%S) +$((SECONDS))s $*"; }
# The build starts beside the installs: they wait on the network, it on the CPU.
build_log="$(mktemp)"
log="$(mktemp)"
beside="$(mktemp -d)"
trap 'rm -rf "$log" "$build_log" "$log.again" "$beside"' EXIT
export OPENFILES_AUTOSTART=0   # no test starts a service by accident (`crate::autostart`); the tests of it turn it on
# Four tests at a time on two cores: most of them wait on real servers, shells and sockets
# (the service crate's integration binary: 137 s with 4, 187 s with 2, 123 s with 6).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
( cargo test --workspace --no-run "$@" >"$build_log" 2>&1 ) &
build_pid=$!
./scripts/install-test-deps.sh
phase "installs done"
build_status=0
wait "$build_pid" || build_status=$?
cat "$build_log"
phase "build done"
if [ "$build_status" != 0 ]; then
  echo "0 passed, 1 failed"
  echo "test.sh: the build failed (above)" >&2
  exit "$build_status"
fi
# The plugins' integration-test binaries run beside the service crate's (scripts/test-runner.sh
# says how; their output comes in cargo's order): the binaries from cargo's own list, the
# service's `it` as the lead. A runner of the user's own, or no list, runs them as cargo does.
host="$(rustc -vV | sed -n 's/^host: //p')"
runner_var="CARGO_TARGET_$(echo "$host" | tr 'a-z-' 'A-Z_')_RUNNER"
beside_env=()
if [ -n "$host" ] && [ -z "${!runner_var:-}" ] &&
  cargo test --workspace --no-run --message-format=json "$@" 2>/dev/null |
  python3 scripts/test-beside.py "$beside" "$(pwd -P)/Cargo.toml"; then
  beside_env=("$runner_var=$PWD/scripts/test-runner.sh" "OPENFILES_TEST_BESIDE=$beside")
  echo "test.sh: beside the service's integration tests: $(cut -f3 "$beside/list" | tr '\n' ' ')"
else
  echo "test.sh: the test binaries run one after another (no service integration test to lead)"
fi
status=0
env "${beside_env[@]}" cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?
phase "tests done"
# A test that failed is run once more, alone (`--exact`, its binary only). One that then
# passes is named as flaky on its own line and counted as passed: a test that fails twice, or
# a binary that crashed, still fails the run. (The suite's real servers and shells share two
# cores; a wait that lost a race under that load is said, not hidden.)
recovered=0
if [ "$status" != 0 ]; then
  first_status=$status
  status=0
  found=0
  while IFS=$'\t' read -r args names; do
    found=1
    if [ -z "$names" ]; then status=1; continue; fi
    echo "test.sh: running again, alone: $names"
    count=$(echo "$names" | wc -w)
    # Without arguments of the caller's, the whole workspace stays selected (`-p X` alone
    # selects other features: a rebuild of most dependencies to run one test); its other
    # binaries of the same kind find no test of that name, or fail the rerun if theirs fails.
    if [ "$#" = 0 ]; then args=$(echo "$args" | sed -E 's/(^| )-p [^ ]+/\1--workspace/'); fi
    # shellcheck disable=SC2086 # cargo's own rerun arguments and the test names are words
    if cargo test $args "$@" -- --exact $names >>"$log.again" 2>&1 &&
      [ "$(awk '/^test result:/ { p += $4 } END { print p + 0 }' "$log.again")" -ge "$count" ]; then
      for n in $names; do echo "test.sh: flaky (failed, then passed alone): $n"; done
      recovered=$((recovered + count))
    else
      cat "$log.again"
      status=1
    fi
    rm -f "$log.again"
  done < <(python3 scripts/test-failures.py "$log")
  # Nothing to run again (the failure was not a test's): the run failed as it was.
  if [ "$found" = 0 ]; then status=$first_status; fi
  phase "reruns done"
fi
# One closing line over every test binary: "N passed, N failed". A binary that ended
# without its summary line (a crash, a signal) counts as one failed test, so the count never
# hides it.
awk -v status="$status" -v recovered="$recovered" '
  /^test result:/ { p += $4; f += $6; if ($3 == "FAILED.") summarised += 1; next }
  /^error: (doc)?test failed, to rerun pass/ { failed_bins += 1 }
  END {
    if (failed_bins > summarised) f += failed_bins - summarised
    p += recovered; f -= recovered
    if (status != 0 && f <= 0) f = 1
    if (status == 0 && f > 0) f = 0
    printf "%d passed, %d failed\n", p, f
  }' "$log"
exit "$status"
