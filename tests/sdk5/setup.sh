#!/usr/bin/env bash
# Installs apache/rocketmq-clients' Python SDK (PyPI `rocketmq-python-client==5.1.2`, gRPC) in
# tests/sdk5/.venv (its own venv: it imports as `rocketmq`, like the C++ bindings of tests/interop), and
# builds the name server, broker and proxy under test (debug builds, where run.py looks for them).
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

echo "sdk5 setup: name server, broker and proxy under test"
(cd "$repo" && cargo build --quiet -p broker -p namesrv -p proxy)
