#!/usr/bin/env bash
# Long run of the storage model tests (not run in CI, which runs 16 cases of each): PROPTEST_CASES
# cases of each property test in storage/tests/model.rs, release build. Saved failing seeds in
# storage/tests/model.proptest-regressions are replayed first; a new failure is added there (commit it).
#
#   PROPTEST_CASES=2000   cases per test (default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES="${PROPTEST_CASES:-2000}"
echo "== storage model tests, $PROPTEST_CASES cases each (release)"
start=$(date +%s)
cargo test --release -p storage --test model
echo "== passed in $(($(date +%s) - start)) s"
