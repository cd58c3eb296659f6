#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/fuzz_targets) for a bounded time each and fails on the first crash.
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   space-separated subset (default: all targets in fuzz/Cargo.toml)
#   FUZZ_JOBS      targets fuzzed at once (default 2: each fuzzer is one process on one core)
# Seeds come from fuzz/corpus/<target> (kept in the repository); new inputs found during the run go to a
# throwaway copy so CI leaves the tree clean. A crash leaves its input in fuzz/artifacts/<target>/ and the
# script exits non-zero: turn that input into a regression test in the crate that owns the decoder.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
FUZZ_JOBS="${FUZZ_JOBS:-2}"
# cargo-fuzz needs nightly-only flags; RUSTC_BOOTSTRAP lets the stable toolchain accept them.
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

targets="${FUZZ_TARGETS:-$(cargo fuzz list --fuzz-dir fuzz)}"
work="$(mktemp -d "${TMPDIR:-/tmp}/fuzz-ci.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# The recovery target writes real segment files with O_DIRECT: keep them off tmpfs.
export FUZZ_STORE_DIR="$PWD/fuzz/target/recovery-store"
mkdir -p "$FUZZ_STORE_DIR"

echo "== building fuzz targets"
for target in $targets; do
    cargo fuzz build --fuzz-dir fuzz "$target"
done

# fuzz_one TARGET: one bounded run; its output goes to $work/TARGET.log, printed when it ends.
fuzz_one() {
    local target=$1 corpus="$work/$1"
    mkdir -p "$corpus"
    if [ -d "fuzz/corpus/$target" ]; then
        cp -r "fuzz/corpus/$target/." "$corpus/"
    fi
    # -rss_limit_mb: recovery opens a store per input; 2 GiB leaves room without hiding a runaway.
    local rc=0
    cargo fuzz run --fuzz-dir fuzz "$target" "$corpus" -- \
        -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
        >"$work/$target.log" 2>&1 || rc=$?
    echo "== fuzzed $target for ${FUZZ_SECONDS}s (exit $rc)"
    tail -n 25 "$work/$target.log"
    if [ "$rc" != 0 ]; then
        touch "$work/$target.failed"
        # The crash reason sits far above the tail: print it, and the input, so a CI log alone
        # is enough to reproduce (the CI checkout and its fuzz/artifacts are gone afterwards).
        echo "== $target: why it failed"
        grep -E -A12 "panicked|==ERROR|ERROR: libFuzzer|deadly signal|SUMMARY" "$work/$target.log" | head -n 60 || true
        local input
        for input in fuzz/artifacts/"$target"/*; do
            [ -f "$input" ] || continue
            echo "== $target: input $input ($(stat -c %s "$input") bytes), base64:"
            head -c 65536 "$input" | base64 -w 0
            echo
        done
    fi
}

running=0
for target in $targets; do
    if [ "$running" -ge "$FUZZ_JOBS" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    echo "== fuzzing $target for ${FUZZ_SECONDS}s"
    fuzz_one "$target" &
    running=$((running + 1))
done
wait
failed=()
for target in $targets; do
    [ ! -e "$work/$target.failed" ] || failed+=("$target")
done
rm -rf "$FUZZ_STORE_DIR"

if [ "${#failed[@]}" -gt 0 ]; then
    echo "== fuzzing found crashes in: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
echo "== fuzzing: no crashes in $(echo $targets | wc -w) targets"
