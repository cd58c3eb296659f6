#!/usr/bin/env bash
# Installs the real clients the interop tests drive and builds what they run: Python `rocketmq==0.4.4`
# (the official C++ client inside) in tests/interop/.venv, Apache RocketMQ's Java clients 4.9.8 and 5.5.0
# from Maven Central (tests/apache/setup.sh; a JDK and Maven from apt when missing) and the programs in
# java/ compiled against each, Apache's 4.9.7 name server and broker (the migration case), the Go
# client (apache/rocketmq-client-go/v2, go-client/build.sh),
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

echo "interop setup: Apache RocketMQ's Java clients from Maven Central (tests/apache/)"
# The programs of java/ are compiled against each client set into java/build/<set>/ (git-ignored),
# again only when a source or the set's pom changes; java/build/built.json lists the sets built. A set
# Maven cannot serve is skipped with the line naming what is missing, and so are its cases.
java_build="$here/java/build"
mkdir -p "$java_build"
built=()
for set in rocketmq-4.9.8 rocketmq-5.5.0; do
  if ! "$repo/tests/apache/setup.sh" "$set"; then
    echo "SKIPPED: the Java cases on $set (Apache's artifacts unavailable, above)"
    continue
  fi
  # Sql92Diff needs Apache's SQL92 filter module, which Maven serves with the 5.x broker but not for 4.9.8.
  sources=()
  for src in "$here"/java/*.java; do
    [ "$set" != rocketmq-4.9.8 ] || [ "$(basename "$src")" != Sql92Diff.java ] || continue
    sources+=("$src")
  done
  hash="$(cat "${sources[@]}" "$repo/tests/apache/poms/$set.xml" | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$java_build/$set/classes.hash" 2>/dev/null)" != "$hash" ]; then
    rm -rf "$java_build/$set"
    mkdir -p "$java_build/$set/classes"
    "$repo/tests/apache/javac.sh" "$set" -nowarn -d "$java_build/$set/classes" "${sources[@]}"
    echo "$hash" > "$java_build/$set/classes.hash"
  fi
  built+=("\"$set\"")
done
(IFS=,; echo "[${built[*]}]") > "$java_build/built.json"
# Apache's 4.x name server and broker for the migration case (cases_migration.py): Maven Central has
# none of 4.9.8, so 4.9.7's (its 5.x servers come with the rocketmq-5.5.0 set above).
if ! "$repo/tests/apache/setup.sh" rocketmq-4.9.7; then
  echo "SKIPPED: Apache's 4.9.7 servers (above); the migration case from Apache 4.x will fail"
fi

echo "interop setup: broker, name server, controller and mqadmin under test"
(cd "$repo" && cargo build --quiet -p broker -p namesrv -p controller -p mqadmin)

echo "interop setup: rust client (rocketmq-client-rust 1.0.0; slow the first time)"
# Always its own workspace (where run.py looks: rust-client/target/release/), whatever CARGO_TARGET_DIR
# says for the main one; its compiled dependencies are kept in $ROCKETMQ_TEST_CACHE when that is set.
rust_target="$here/rust-client/target"
if [ -n "${ROCKETMQ_TEST_CACHE:-}" ]; then
  rust_target="$ROCKETMQ_TEST_CACHE/interop-rust-client-target"
fi
(cd "$here/rust-client" && CARGO_TARGET_DIR="$rust_target" cargo build --quiet --release)
if [ "$rust_target" != "$here/rust-client/target" ]; then
  mkdir -p "$here/rust-client/target/release"
  cp -f "$rust_target/release/interop-rust-client" "$here/rust-client/target/release/interop-rust-client"
fi

echo "interop setup: Go client (apache/rocketmq-client-go/v2 from the Go module proxy)"
"$here/go-client/build.sh"
