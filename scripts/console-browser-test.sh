#!/usr/bin/env bash
# The web console's browser test: installs Debian's Chromium (packages chromium, chromium-driver) when
# missing and the test's locked npm packages (playwright-core, which drives that Chromium and downloads
# no browser), then runs console/tests/browser.rs against a real name server and broker.
# Screenshots: CONSOLE_TEST_OUT (default target/<profile>/console-browser/), paths printed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium and chromium-driver"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium chromium-driver >/dev/null
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "node and npm are needed (Node.js 20 or later) for the console's browser test" >&2
  exit 1
fi
echo "== npm ci in console/tests/browser ($(node --version), $(/usr/bin/chromium --version))"
(cd console/tests/browser && npm ci --no-audit --no-fund --loglevel=error)

echo "== console browser test (real name server + broker, headless Chromium)"
# The broker and name server binaries the test starts: test-all's `cargo test --workspace` has just
# built them; alone, build them when missing (after a change: `cargo build -p broker -p namesrv`).
bin_dir=${CARGO_TARGET_DIR:-target}/debug
if [ ! -x "$bin_dir/broker" ] || [ ! -x "$bin_dir/namesrv" ]; then
  cargo build -p broker -p namesrv
fi
timeout 600 cargo test -p console --test browser -- --ignored --nocapture
