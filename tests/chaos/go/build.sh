#!/usr/bin/env bash
# Builds main.go on the Go client (github.com/apache/rocketmq-client-go/v2 from the Go module proxy, pinned by
# go.mod / go.sum) into build/chaos-go, where go_clients.py looks; skipped when the binary is newer than
# every .go, go.mod and go.sum. Exits 1 with the reason on stderr when there is no Go toolchain.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/build/chaos-go"
go_bin="$(command -v go || true)"
if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then
  go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ]; then
  echo "no Go toolchain (go on PATH or /usr/local/go/bin/go)" >&2
  exit 1
fi
if [ -x "$out" ] && [ -z "$(find "$here" -maxdepth 1 \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$out" | head -n 1)" ]; then
  exit 0
fi
mkdir -p "$here/build"
cd "$here"
# go.sum is committed: -mod=readonly fails on a missing or changed checksum instead of rewriting go.mod.
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
export GOTOOLCHAIN=local
"$go_bin" build -trimpath -o "$out.tmp" .
mv -f "$out.tmp" "$out"
