#!/usr/bin/env bash
# Long run of the storage model tests (not run in CI, which runs 16 cases of each): PROPTEST_CASES
# cases of each property test in storage/tests/model.rs, release build. Saved failing seeds in
# storage/tests/model.proptest-regressions are replayed first; a new failure is added there (commit it).
#
#   PROPTEST_CASES=2000   cases per test (default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES="${PROPTEST_CASES:-2000}"
# Every case runs in its own glommio executor, and glommio leaves one eventfd open per finished
# executor: two tests of 2000 cases need more descriptors than the usual soft limit of 1024.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((2 * PROPTEST_CASES + 500)) ]; then
    echo "warning: open-file limit $(ulimit -n) may run out before $PROPTEST_CASES cases of each test" >&2
fi
echo "== storage model tests, $PROPTEST_CASES cases each (release)"
start=$(date +%s)
cargo test --release -p storage --test model
echo "== passed in $(($(date +%s) - start)) s"
