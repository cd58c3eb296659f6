#!/usr/bin/env bash
# TLS against plaintext on one build, interleaved: the broker with tls.server.mode = disabled and a
# plaintext loadgen (the old path), permissive (the default) with a plaintext loadgen, and permissive
# with a TLS loadgen (ROCKETMQ_TLS_ENABLE=true). Each run prints send TPS, RT and the broker's and
# name server's CPU time per message ("cpu N us/msg", as bench/ab.sh), ROUNDS times.
#
#   bench/tls.sh RELEASE_DIR [ROUNDS]      e.g. cargo build --release -p broker -p namesrv -p loadgen
#                                               bench/tls.sh target/release 3
#
# Environment: DURATION [8s], WARMUP [2s], SIZE [1024] bytes, INFLIGHT [64], BATCH [1] (messages per
# SEND_BATCH_MESSAGE), FLUSH [ASYNC_FLUSH], DISK_RATIO [75] (the broker's diskMaxUsedSpaceRatio, and how
# full the disk may be before this refuses to run).
set -euo pipefail

BIN=$(cd "${1:?release dir}" && pwd)
ROUNDS=${2:-3}
LOADGEN=${LOADGEN:-$BIN/loadgen}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-2s}
SIZE=${SIZE:-1024}
INFLIGHT=${INFLIGHT:-64}
BATCH=${BATCH:-1}
FLUSH=${FLUSH:-ASYNC_FLUSH}
WORK=$(mktemp -d /tmp/tlsbench.XXXXXX)
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
trap 'stop_pair; rm -rf "$WORK"' EXIT
DISK_RATIO=${DISK_RATIO:-75}
require_disk_room "$WORK" "$DISK_RATIO"

# run NAME MODE CLIENT_TLS: one run on a fresh broker in tls.server.mode MODE; prints its figures.
run() {
    local name=$1 mode=$2 client_tls=$3 out t0
    start_pair "$BIN" "flushDiskType = \"$FLUSH\"
diskMaxUsedSpaceRatio = $DISK_RATIO
\"tls.server.mode\" = \"$mode\"" TlsTopic
    rm -f "$WORK/run.json"
    t0=$(cpu_ticks "$BROKER_PID" "$NS_PID")
    out=$(ROCKETMQ_TLS_ENABLE=$client_tls "$LOADGEN" produce --namesrv "$NS" --topic TlsTopic --size "$SIZE" \
        --warmup "$WARMUP" --duration "$DURATION" --json "$WORK/run.json" --mode sync --inflight "$INFLIGHT" \
        --batch "$BATCH" 2>&1 | grep '^Send TPS' | tail -1 | awk -F'|' '{print $1 "|" $5}')
    if [ -f "$WORK/run.json" ]; then
        out="$out| cpu $(cpu_us_per_msg $(($(cpu_ticks "$BROKER_PID" "$NS_PID") - t0)) "$WORK/run.json") us/msg"
    fi
    stop_pair
    echo "$name [$out]"
}

for round in $(seq 1 "$ROUNDS"); do
    echo "round $round: $(run disabled-plain disabled false) $(run permissive-plain permissive false)" \
        "$(run permissive-tls permissive true)"
done
