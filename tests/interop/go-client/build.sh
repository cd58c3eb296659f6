#!/usr/bin/env bash
# Builds the interop program on the official Go client (github.com/apache/rocketmq-client-go/v2, from the Go
# module proxy, version pinned in go.mod / go.sum) into build/interop-go-client, where the runner looks
# (tests/interop/harness.py GO_CLIENT). Skipped when the binary is newer than every .go, go.mod and go.sum.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/build/interop-go-client"

go_bin="$(command -v go || true)"
if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then
  go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ]; then
  echo "go-client/build.sh: no Go toolchain (go on PATH or /usr/local/go/bin/go); the go_ interop cases need it" >&2
  exit 1
fi

if [ -x "$out" ]; then
  newer="$(find "$here" -maxdepth 1 \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$out" | head -n 1)"
  if [ -z "$newer" ]; then
    echo "go-client: $out is up to date"
    exit 0
  fi
fi

mkdir -p "$here/build"
cd "$here"
# go.sum is committed: -mod=readonly fails on a missing or changed checksum instead of rewriting go.mod.
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
# Use the local toolchain even where go.mod names a newer patch release, never download another.
export GOTOOLCHAIN=local
"$go_bin" mod download
"$go_bin" build -trimpath -o "$out.tmp" .
mv -f "$out.tmp" "$out"
echo "go-client: built $out ($("$go_bin" version | cut -d' ' -f3), $(grep 'apache/rocketmq-client-go/v2 ' go.mod | xargs))"
