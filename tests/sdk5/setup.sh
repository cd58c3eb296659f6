#!/usr/bin/env bash
# Installs apache/rocketmq-clients' Python SDK (PyPI `rocketmq-python-client==5.1.2`, gRPC) in
# tests/sdk5/.venv (its own venv: it imports as `rocketmq`, like the C++ bindings of tests/interop), its
# Node.js SDK (npm `rocketmq-client-nodejs@1.0.8`, pinned by node/package-lock.json) in
# tests/sdk5/node/node_modules (Node.js and npm from apt when missing), its Java SDK (Maven Central
# `rocketmq-client-java` 5.2.0 through tests/apache/setup.sh; a JDK and Maven from apt when missing) with
# the program in java/ compiled against it, builds the small program on its
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

echo "sdk5 setup: Java SDK (Maven Central rocketmq-client-java 5.2.0, tests/apache/) and java/*.java"
# The programs of java/ are compiled into java/build/classes (git-ignored), again only when a source or the
# set's pom changes. java/build/available is "yes" when the Java cases can run, else why not: a set Maven
# cannot serve is not a setup failure, run.py skips the Java cases and says so.
java_set=rocketmq-client-java-5.2.0
java_build="$here/java/build"
mkdir -p "$java_build"
rm -f "$java_build/available"
if java_setup_out=$("$repo/tests/apache/setup.sh" "$java_set" 2>&1); then
  [ -z "$java_setup_out" ] || echo "$java_setup_out"
  java_hash="$(cat "$here"/java/*.java "$repo/tests/apache/poms/$java_set.xml" | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$java_build/classes.hash" 2>/dev/null)" != "$java_hash" ]; then
    rm -rf "$java_build/classes" "$java_build/classes.hash"
    mkdir -p "$java_build/classes"
    "$repo/tests/apache/javac.sh" "$java_set" -nowarn -d "$java_build/classes" "$here"/java/*.java
    echo "$java_hash" > "$java_build/classes.hash"
  fi
  echo yes > "$java_build/available"
else
  java_rc=$?
  echo "$java_setup_out"
  java_why=$(echo "$java_setup_out" | grep -m1 'MISSING from Maven Central' || true)
  [ -n "$java_why" ] || java_why="tests/apache/setup.sh $java_set exited $java_rc: $(echo "$java_setup_out" | tail -n1)"
  echo "SKIPPED: the Java gRPC SDK cases ($java_why)"
  echo "$java_why" > "$java_build/available"
fi

echo "sdk5 setup: Rust SDK program (crates.io rocketmq 5.0.0; its own workspace, a few minutes the first time)"
# Always its own workspace (where run.py looks: rust-client/target/debug/), whatever CARGO_TARGET_DIR
# says for the main one; its compiled dependencies are kept in $ROCKETMQ_TEST_CACHE when that is set.
rust_target="$here/rust-client/target"
if [ -n "${ROCKETMQ_TEST_CACHE:-}" ]; then
  rust_target="$ROCKETMQ_TEST_CACHE/sdk5-rust-client-target"
fi
(cd "$here/rust-client" && CARGO_TARGET_DIR="$rust_target" cargo build --quiet)
if [ "$rust_target" != "$here/rust-client/target" ]; then
  mkdir -p "$here/rust-client/target/debug"
  cp -f "$rust_target/debug/sdk5-rust-client" "$here/rust-client/target/debug/sdk5-rust-client"
fi

echo "sdk5 setup: name server, broker, proxy and mqadmin under test"
(cd "$repo" && cargo build --quiet -p broker -p namesrv -p proxy -p mqadmin)
# The proxy's own gRPC load generator drives the batch-ack case.
(cd "$repo" && cargo build --quiet -p proxy --example grpc_load)
