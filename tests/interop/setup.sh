#!/usr/bin/env bash
# Installs the real clients the interop tests drive and builds what they run: Python `rocketmq==0.4.4`
# (the official C++ client inside) in tests/interop/.venv, Apache RocketMQ 4.9.8's Java client (the
# shared kit, whose setup.sh installs a JDK with apt) and the programs in java/ compiled against it,
# the small program on crates.io `rocketmq-client-rust = "1.0.0"` (its own workspace, release build),
# and our broker, name server and controller (debug builds, where run.py looks for them:
# $CARGO_TARGET_DIR or target/, then debug/).
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

echo "interop setup: Apache RocketMQ 4.9.8 Java client (the kit's setup.sh: a JDK and Java libraries via apt)"
# The kit: $RMQ_KIT, else shared/apache-rocketmq in or beside the checkout, else /work/shared's. It may
# be read-only: its cache and our compiled programs go to java/build/ (git-ignored).
kit="${RMQ_KIT:-}"
if [ -z "$kit" ]; then
  for candidate in "$repo/shared/apache-rocketmq" "$repo/../shared/apache-rocketmq" /work/shared/apache-rocketmq; do
    if [ -x "$candidate/setup.sh" ]; then kit="$(cd "$candidate" && pwd)"; break; fi
  done
fi
if [ -z "$kit" ] || [ ! -x "$kit/setup.sh" ]; then
  echo "the Apache RocketMQ kit (shared/apache-rocketmq) was not found; set RMQ_KIT" >&2
  exit 1
fi
java_build="$here/java/build"
export RMQ_CACHE="$java_build/kit-cache"
mkdir -p "$java_build"
"$kit/setup.sh"
# Compiled once per content of the programs and of the kit's jars.
java_hash="$(cat "$here"/java/*.java "$kit/lib/SHA256SUMS" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$java_build/classes.hash" 2>/dev/null)" != "$java_hash" ]; then
  rm -rf "$java_build/classes"
  mkdir -p "$java_build/classes"
  # The broker jar holds Apache's filter module (its SQL92 parser and evaluator), for Sql92Diff.
  "$kit/javac.sh" -nowarn -cp "$kit/lib/rocketmq-broker-all-4.9.8.jar" -d "$java_build/classes" "$here"/java/*.java
  echo "$java_hash" > "$java_build/classes.hash"
fi
printf '{"kit": "%s", "cache": "%s"}\n' "$kit" "$RMQ_CACHE" > "$java_build/kit.json"

echo "interop setup: broker, name server and controller under test"
(cd "$repo" && cargo build --quiet -p broker -p namesrv -p controller)

echo "interop setup: rust client (rocketmq-client-rust 1.0.0; slow the first time)"
# Always its own target dir (where run.py looks), whatever CARGO_TARGET_DIR says for the main workspace.
(cd "$here/rust-client" && CARGO_TARGET_DIR="$here/rust-client/target" cargo build --quiet --release)
