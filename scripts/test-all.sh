#!/usr/bin/env bash
# Runs every test of the project: unit and integration tests of the workspace, two random chaos
# schedules (tests/chaos), the web console in
# Debian's Chromium (scripts/console-browser-test.sh installs it), then the interop tests
# with real RocketMQ clients written by other people (installed here, into tests/interop/; Apache's Java
# clients and tools come from Maven Central through tests/apache/setup.sh, a JDK and Maven from apt when
# missing), then the RocketMQ 5 SDK tests through the proxy (tests/sdk5/).
set -euo pipefail
cd "$(dirname "$0")/.."

# Build outputs kept between runs, outside the checkout (CI tests a fresh clone each time): the
# workspace's target directory when CARGO_TARGET_DIR is not set (compiled dependencies and fuzz builds
# are reused; the workspace's own crates rebuild, their files being new), and the client programs'
# own workspaces and virtual environments (tests/interop/setup.sh, tests/sdk5/setup.sh). Without
# incremental data a reused target directory stays near its size after one build.
export ROCKETMQ_TEST_CACHE="${ROCKETMQ_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-rs-tests}"
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
    export CARGO_TARGET_DIR="$ROCKETMQ_TEST_CACHE/target" CARGO_INCREMENTAL=0
fi
mkdir -p "$ROCKETMQ_TEST_CACHE"

# Each step's start, with the minutes since the run began, so a slow step shows in CI's log.
step() { echo "== [$(date -u +%H:%M:%S), +$((SECONDS / 60)) min] $*"; }

# Clippy type-checks every target (benches and examples included, so they cannot rot): a separate
# `cargo check` would only repeat that work.
step "cargo clippy of every target, warnings as errors (lint levels: Cargo.toml, clippy.toml)"
cargo clippy --workspace --all-targets -- -D warnings

step "no import cycles between the files of any crate"
# Two commands, not `a && b`: `set -e` does not stop the run when the head of an && list fails.
scripts/import-cycles.py --self-test
scripts/import-cycles.py

step "test host packages (network namespaces, nftables, Debian's prometheus for prometheus_scrape)"
scripts/setup-test-host.sh
scripts/setup-prometheus.sh || echo "setup-prometheus failed: broker/tests/prometheus_scrape fails in CI, skips elsewhere" >&2

step "cargo test --workspace (every test binary runs; any failure fails the run)"
cargo test --workspace --no-fail-fast

step "broker suites that cross shards, again with one broker per process (shardRouting = forward)"
TEST_SHARD_ROUTING=forward cargo test -p broker --no-fail-fast --test send_pull --test consumer_groups \
    --test request_reply --test sql_filter --test delay_retry --test restart --test clients_admin --test pop

step "disk faults through the storage crate's fail points (a test-only build: --features failpoints)"
cargo clippy -p broker -p storage -p ha --features broker/failpoints,storage/failpoints,ha/failpoints --all-targets -- -D warnings
cargo test -p broker --features failpoints --no-fail-fast --test fault_disk_io
cargo test -p storage --features failpoints --no-fail-fast --test truncate_failure --test replicated_after_sync_failure
cargo test -p ha --features failpoints --no-fail-fast --test cut_failure --test slave_sync_failure
cargo test -p storage --features failpoints --no-fail-fast --lib --test disk_faults
cargo test -p storage --features failpoints --no-fail-fast --test compaction

# Random fault schedules on a controller-mode cluster in network namespaces (tests/chaos, root): two
# random seeds of 45 s, each printed with its replay command; a failing seed keeps its run directory.
step "chaos: two random fault schedules with the history checkers (about 2 minutes)"
scripts/chaos.sh --short

# 30 s per target in CI (the script's default is 60): every run adds its coverage to a fresh corpus
# copy only, so the seeds decide most of what a run reaches; longer runs by hand (`FUZZ_SECONDS`).
step "fuzzing"
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" scripts/fuzz-ci.sh

step "the web console in Chromium"
scripts/console-browser-test.sh

# Both suites run two cases at a time (-j 2: most cases wait on JVMs, brokers and sleeps, not CPU), each
# case with its own port slice; the exclusive ones run alone after the others. `-j 1` in "$@" overrides.
step "interop tests with real clients"
tests/interop/setup.sh
tests/interop/.venv/bin/python tests/interop/run.py -j 2 "$@"

step "RocketMQ 5 SDK tests through the gRPC proxy (tests/sdk5, about 6 minutes)"
tests/sdk5/setup.sh
timeout 1500 tests/sdk5/.venv/bin/python tests/sdk5/run.py -j 2
