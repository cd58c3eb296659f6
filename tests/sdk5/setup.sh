#!/usr/bin/env bash
# Installs apache/rocketmq-clients' Python SDK (PyPI `rocketmq-python-client==5.1.2`, gRPC) in
# tests/sdk5/.venv (its own venv: it imports as `rocketmq`, like the C++ bindings of tests/interop), its
# Node.js SDK (npm `rocketmq-client-nodejs@1.0.8`, pinned by node/package-lock.json) in
# tests/sdk5/node/node_modules (Node.js and npm from apt when missing), builds the small program on its
# Rust SDK (crates.io `rocketmq` 5.0.0) in rust-client/ (own workspace), and builds the name server,
# broker, proxy and mqadmin under test (debug builds, where run.py looks for them).
# Safe to run again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

echo "sdk5 setup: python SDK"
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
fi
if ! "$here/.venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('rocketmq-python-client') != '5.1.2')" 2>/dev/null; then
  "$here/.venv/bin/pip" install --quiet "rocketmq-python-client==5.1.2"
fi
"$here/.venv/bin/python" -c "from rocketmq import Producer, SimpleConsumer"

echo "sdk5 setup: Node.js SDK"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
if [ ! -d "$here/node/node_modules/rocketmq-client-nodejs" ]; then
  (cd "$here/node" && npm ci --no-audit --no-fund --loglevel=error)
fi
(cd "$here/node" && node -e "require('rocketmq-client-nodejs')")

echo "sdk5 setup: Rust SDK program (crates.io rocketmq 5.0.0; its own workspace, a few minutes the first time)"
# Always its own target dir (where run.py looks), whatever CARGO_TARGET_DIR says for the main workspace.
(cd "$here/rust-client" && CARGO_TARGET_DIR="$here/rust-client/target" cargo build --quiet)

echo "sdk5 setup: name server, broker, proxy and mqadmin under test"
(cd "$repo" && cargo build --quiet -p broker -p namesrv -p proxy -p mqadmin)
# The proxy's own gRPC load generator drives the batch-ack case.
(cd "$repo" && cargo build --quiet -p proxy --example grpc_load)
