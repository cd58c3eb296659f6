#!/usr/bin/env bash
# Builds and starts a local name server (127.0.0.1:9876) and broker (127.0.0.1:10911, store ./store).
# Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p namesrv -p broker
target/release/namesrv --listen 127.0.0.1:9876 &
namesrv_pid=$!
trap 'kill -TERM $namesrv_pid 2>/dev/null || true' EXIT
sleep 0.5
target/release/broker --config deploy/conf/local.toml
