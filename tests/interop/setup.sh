#!/usr/bin/env bash
# Installs the real clients the interop tests drive and builds what they run: Python `rocketmq==0.4.4`
# (the official C++ client inside) in tests/interop/.venv, the small program on crates.io
# `rocketmq-client-rust = "1.0.0"` (its own workspace, release build), and our broker + name server
# (debug builds, where run.py looks for them: $CARGO_TARGET_DIR or target/, then debug/).
# Safe to run again: each step is skipped or incremental when already done.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

echo "interop setup: python client"
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
fi
if ! "$here/.venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('rocketmq') != '0.4.4')" 2>/dev/null; then
  "$here/.venv/bin/pip" install --quiet "rocketmq==0.4.4"
fi
# The wheel bundles librocketmq.so; fail here, not in every case, if it cannot load.
"$here/.venv/bin/python" -c "import rocketmq.client"

echo "interop setup: broker and name server under test"
(cd "$repo" && cargo build --quiet -p broker -p namesrv)

echo "interop setup: rust client (rocketmq-client-rust 1.0.0; slow the first time)"
# Always its own target dir (where run.py looks), whatever CARGO_TARGET_DIR says for the main workspace.
(cd "$here/rust-client" && CARGO_TARGET_DIR="$here/rust-client/target" cargo build --quiet --release)
