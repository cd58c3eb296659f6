#!/usr/bin/env bash
# Installs what the tests need from Debian's packages on the test machine: iproute2 (network
# namespaces and veth links), nftables (packet loss in those namespaces) and faketime (libfaketime,
# which steps one process's wall clock). Idempotent; without
# root or apt it says so and leaves the tests that need them to skip with the reason.
set -euo pipefail

missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || missing+=(faketime)
# mkfs.ext4: the chaos brokers' stores on small file systems of their own (disk_full).
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-test-host: cannot install ${missing[*]} (needs root and apt-get); the tests that need them skip" >&2
    exit 0
fi
echo "== installing ${missing[*]}"
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
