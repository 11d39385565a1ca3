#!/usr/bin/env bash
# Run every fuzz target in fuzz/ for SECONDS each (default 20) with cargo-fuzz (libFuzzer).
#
# cargo-fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept
# them. Sanitizer: none by default (the code under test is safe Rust; set FUZZ_SANITIZER=address
# for ASan). The seed corpus is fuzz/corpus/<target>/seed-*; new inputs libFuzzer finds are
# kept there but ignored by git. Crashes land in fuzz/artifacts/<target>/ and fail the run.
#
# Prints one line per target: executions, and whether it crashed. Exit status 1 on a crash.
# Needs: cargo install cargo-fuzz
set -euo pipefail
seconds="${1:-20}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export RUSTC_BOOTSTRAP=1
san="${FUZZ_SANITIZER:-none}"
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo install cargo-fuzz" >&2; exit 2; }
start=$(date +%s)
cargo fuzz build -s "$san" >&2
built=$(date +%s)
failed=0
for target in $(cargo fuzz list); do
    mkdir -p "fuzz/corpus/$target"
    log="$(mktemp)"
    if cargo fuzz run -s "$san" "$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"$log" 2>&1; then
        result=ok
    else
        result=CRASH
        failed=1
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz $target: $execs executions in ${seconds}s: $result"
    if [ "$result" = CRASH ]; then
        grep -E 'panicked|ERROR|Test unit written' "$log" | head -5 | sed 's/^/    /'
    fi
    rm -f "$log"
done
end=$(date +%s)
echo "fuzz: build $((built - start)) s, total $((end - start)) s"
exit "$failed"
