#!/usr/bin/env bash
# Installs the real clients the interop tests drive: Python `rocketmq==0.4.4` (the official C++ client
# inside) in a venv, and a small program on crates.io `rocketmq-client-rust = "1.0.0"` (own workspace).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
fi
if ! "$here/.venv/bin/python" -c "import rocketmq.client" 2>/dev/null; then
  "$here/.venv/bin/pip" install --quiet "rocketmq==0.4.4"
fi
# The broker and name server under test (debug builds are what cargo test already built).
(cd "$here/../.." && cargo build --quiet -p broker -p namesrv)
(cd "$here/rust-client" && cargo build --quiet --release)
