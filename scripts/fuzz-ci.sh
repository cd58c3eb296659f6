#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/fuzz_targets) for a bounded time each and fails on the first crash.
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   space-separated subset (default: all targets in fuzz/Cargo.toml)
# Seeds come from fuzz/corpus/<target> (kept in the repository); new inputs found during the run go to a
# throwaway copy so CI leaves the tree clean. A crash leaves its input in fuzz/artifacts/<target>/ and the
# script exits non-zero: turn that input into a regression test in the crate that owns the decoder.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
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

failed=()
for target in $targets; do
    corpus="$work/$target"
    mkdir -p "$corpus"
    if [ -d "fuzz/corpus/$target" ]; then
        cp -r "fuzz/corpus/$target/." "$corpus/"
    fi
    echo "== fuzzing $target for ${FUZZ_SECONDS}s"
    # -rss_limit_mb: recovery opens a store per input; 2 GiB leaves room without hiding a runaway.
    if ! cargo fuzz run --fuzz-dir fuzz "$target" "$corpus" -- \
            -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1; then
        failed+=("$target")
    fi
done
rm -rf "$FUZZ_STORE_DIR"

if [ "${#failed[@]}" -gt 0 ]; then
    echo "== fuzzing found crashes in: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
echo "== fuzzing: no crashes in $(echo $targets | wc -w) targets"
