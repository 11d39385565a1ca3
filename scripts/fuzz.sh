#!/usr/bin/env bash
# Build every fuzz target in fuzz/ once, then run each for a bounded time with cargo-fuzz
# (libFuzzer). Usage:
#
#   scripts/fuzz.sh [SECONDS] [--budget TOTAL]
#
#   SECONDS   fuzzing time per target (default 20).
#   --budget  a cap on the whole run, build included: once the build is done, what is left
#             is shared among the targets (each gets min(SECONDS, left / targets left - 2),
#             at least 1 s, which still replays its whole corpus). For CI.
#
# Installs cargo-fuzz when it is missing (`cargo install cargo-fuzz --locked`), and only then.
# cargo-fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept
# them. Sanitizer: none by default (the code under test is safe Rust; FUZZ_SANITIZER=address
# for ASan). The build is tuned for a short cold build, which dominates a CI run (see
# RELIABILITY.md, "Fuzzing"): opt-level 0 and 16 codegen units instead of cargo-fuzz's
# opt-level 3 with one unit (cold build 2-5 min instead of 5-10 on a loaded 2-core machine,
# for about a tenth of the executions per second); debug assertions, overflow checks and
# line tables stay on. For long local runs: FUZZ_OPT_LEVEL=3 FUZZ_CODEGEN_UNITS=1.
#
# The seed corpus is fuzz/corpus/<target>/seed-*; new inputs libFuzzer finds are kept there
# but ignored by git. A crash lands in fuzz/artifacts/<target>/ and fails the run.
# Prints one line per target (executions, crashes) and a closing line; exit status 1 when a
# target crashed, 2 on a usage or build error.
set -euo pipefail
seconds=20
budget=""
while [ $# -gt 0 ]; do
    case "$1" in
        --budget) budget="${2:?--budget needs a number of seconds}"; shift 2 ;;
        --budget=*) budget="${1#--budget=}"; shift ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *[!0-9]*|"") echo "fuzz.sh: not a number of seconds: $1" >&2; exit 2 ;;
        *) seconds="$1"; shift ;;
    esac
done
case "$budget" in *[!0-9]*) echo "fuzz.sh: not a number of seconds: $budget" >&2; exit 2 ;; esac

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
start=$(date +%s)
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked >&2
fi
export RUSTC_BOOTSTRAP=1
export CARGO_PROFILE_RELEASE_OPT_LEVEL="${FUZZ_OPT_LEVEL:-0}"
san="${FUZZ_SANITIZER:-none}"
units="${FUZZ_CODEGEN_UNITS:-16}"
flags=(-s "$san" --codegen-units "$units")
installed=$(date +%s)
if ! cargo fuzz build "${flags[@]}" >&2; then
    echo "fuzz: build failed" >&2
    exit 2
fi
built=$(date +%s)
echo "fuzz: cargo-fuzz ready in $((installed - start)) s, targets built in $((built - installed)) s"

targets=($(cargo fuzz list))
left_targets=${#targets[@]}
failed=0
crashed=()
for target in "${targets[@]}"; do
    run=$seconds
    if [ -n "$budget" ]; then
        # Each run costs about 2 s beyond its fuzzing time (cargo's freshness check, corpus
        # loading, libFuzzer's exit).
        left=$((budget - ($(date +%s) - start)))
        share=$((left / left_targets - 2))
        [ "$share" -lt "$run" ] && run=$share
        [ "$run" -lt 1 ] && run=1
    fi
    left_targets=$((left_targets - 1))
    mkdir -p "fuzz/corpus/$target"
    log="$(mktemp)"
    if cargo fuzz run "${flags[@]}" "$target" "fuzz/corpus/$target" -- \
        -max_total_time="$run" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"$log" 2>&1; then
        result="0 crashes"
    else
        result="CRASH"
        failed=1
        crashed+=("$target")
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz $target: $execs executions in ${run} s: $result"
    if [ "$result" = CRASH ]; then
        grep -E -A1 'panicked at|Test unit written|Reproduce with' "$log" | grep -v '^--$' |
            head -8 | sed 's/^/    /'
    fi
    rm -f "$log"
done
end=$(date +%s)
echo "fuzz: ${#targets[@]} targets, ${#crashed[@]} crashed${crashed[*]:+ (${crashed[*]})}; build $((built - installed)) s, total $((end - start)) s"
exit "$failed"
