#!/usr/bin/env bash
# The chaos harness (tests/chaos/): a controller-mode cluster (3 controllers, 2 name servers, two
# broker groups of 3 replicas, the gRPC proxy) in network namespaces under a seeded random fault schedule, producers and a consumer group keeping a history, the checkers over it and
# send and consume availability windows (docs/testing.md, "Chaos").
#
#   scripts/chaos.sh --short                  # 2 random seeds of 45 s (2-4 minutes), seeds printed
#   scripts/chaos.sh --seed N [--seconds S]   # replay one seed (any tests/chaos/run.py options)
#   scripts/chaos.sh --minutes 60             # long mode: seeds of 120 s, report in docs/benchmarks/
#   scripts/chaos.sh --single [N] [--kinds K] # each fault kind alone, N times (2), timed; with --minutes first
#
# Needs root (namespaces, nftables: scripts/setup-test-host.sh) and debug builds of broker, namesrv,
# controller and proxy (built here unless CHAOS_BIN_DIR points at others). Whatever way the runner ends, what it
# left behind (processes under its directory, its namespaces and bridge) is removed afterwards.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ -z "${CHAOS_BIN_DIR:-}" ]; then
    # The broker with the storage fail points (the disk fault kinds switch them at runtime); its own
    # invocation, so that the feature does not reach the other two through feature unification.
    cargo build -q -p namesrv -p controller -p proxy || exit 1
    cargo build -q -p broker --features failpoints || exit 1
fi
# The checkers on made-up histories first (a second): a checker that cannot fail proves nothing.
python3 tests/chaos/test_checker.py 2>&1 | tail -n 1 | grep -qx OK || { python3 tests/chaos/test_checker.py; exit 1; }
# The gRPC clients' FIFO checker and consume positions likewise (the live part of test_clients.py
# needs its own local stack: run it by hand).
python3 tests/chaos/test_clients.py Fifo ConsumeOps 2>&1 | tail -n 1 | grep -qx OK \
    || { python3 tests/chaos/test_clients.py Fifo ConsumeOps; exit 1; }
workdir="$(mktemp -d /tmp/rmq-chaos-XXXXXX)"
limit=0
case "${1:-}" in
    --short)
        shift
        set -- --seeds 2 --seconds 45 "$@"
        limit=600
        ;;
    --minutes)
        minutes="${2:?--minutes needs a number}"
        shift 2
        set -- --minutes "$minutes" --seconds 120 --report "docs/benchmarks/chaos-$(date -u +%Y-%m-%d).md" "$@"
        ;;
esac

python3 tests/chaos/run.py --workdir "$workdir" "$@" &
runner=$!
if [ "$limit" -gt 0 ]; then
    ( sleep "$limit"; kill -TERM "$runner" 2>/dev/null ) &
    watchdog=$!
fi
trap 'kill -TERM "$runner" 2>/dev/null' INT TERM
wait "$runner"
status=$?
# A trapped signal ends the first wait at once; give the runner its own clean-up time.
if kill -0 "$runner" 2>/dev/null; then
    for _ in $(seq 60); do
        kill -0 "$runner" 2>/dev/null || break
        sleep 1
    done
    kill -KILL "$runner" 2>/dev/null
    status=143
fi
[ -n "${watchdog:-}" ] && kill "$watchdog" 2>/dev/null

# Leftovers of a runner that was killed or timed out: its processes (each by id), namespaces, bridge.
for pid in $(ps -eo pid=,args= | awk -v dir="$workdir/" 'index($2, dir) == 1 {print $1}'); do
    kill -KILL "$pid" 2>/dev/null
done
# Its brokers' file systems (tests/chaos/faults_disk.py): the mounts under its directory, deepest
# first, then the loop devices of images there.
for mnt in $(awk -v dir="$workdir/" 'index($2, dir) == 1 {print $2}' /proc/self/mounts | sort -r); do
    umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
done
for dev in $(losetup -nO NAME,BACK-FILE 2>/dev/null | awk -v dir="$workdir/" 'index($2, dir) == 1 {print $1}'); do
    losetup -d "$dev" 2>/dev/null
done
tag="$(printf '%x' $((runner & 0xFFFFF)))"
for ns in $(ip netns list 2>/dev/null | awk -v p="ch$tag" 'index($1, p) == 1 && length($1) == length(p) + 2 {print $1}'); do
    ip netns del "$ns" 2>/dev/null
done
for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^ch(b)?$tag[0-9]{0,2}$"); do
    ip link del "$link" 2>/dev/null
done
if [ "$status" -eq 0 ]; then
    rm -rf "$workdir"
fi
exit "$status"
