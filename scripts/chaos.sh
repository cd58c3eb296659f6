#!/usr/bin/env bash
# The chaos harness (tests/chaos/): a controller-mode cluster in network namespaces under a seeded
# random fault schedule, with a history checker and availability windows (docs/testing.md, "Chaos").
#
#   scripts/chaos.sh --short            # CI: 2 random seeds of 45 s (about 3 minutes), seeds printed
#   scripts/chaos.sh --seed N [--seconds S]   # replay one seed
#   scripts/chaos.sh --minutes 60       # long mode: seeds of 120 s for an hour, report in docs/benchmarks/
#
# Needs root (namespaces, nftables: scripts/setup-test-host.sh) and debug builds of broker, namesrv and
# controller (built here unless CHAOS_BIN_DIR points at others).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${CHAOS_BIN_DIR:-}" ]; then
    cargo build -q -p broker -p namesrv -p controller
fi
case "${1:-}" in
    --short)
        shift
        exec timeout -s TERM 420 python3 tests/chaos/run.py --seeds 2 --seconds 45 "$@"
        ;;
    --minutes)
        minutes="${2:?--minutes needs a number}"
        shift 2
        exec python3 tests/chaos/run.py --minutes "$minutes" --seconds 120 \
            --report "docs/benchmarks/chaos-$(date -u +%Y-%m-%d).md" "$@"
        ;;
    *)
        exec python3 tests/chaos/run.py "$@"
        ;;
esac
