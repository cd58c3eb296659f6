#!/usr/bin/env bash
# HA benchmark: loadgen S2 (sync sends, SYNC_FLUSH, 64 in flight, 1 KiB) against a SYNC_MASTER with one
# SLAVE on loopback, and against the same master alone (ASYNC_MASTER, no slave), fresh stores each run.
# Prints TPS and RT percentiles of both and the ratio.
#
#   DURATION=10s WARMUP=3s bench/ha.sh          (release binaries; SKIP_BUILD=1 to reuse them)
#
# Environment: DURATION [10s] WARMUP [3s] SHARDS [all CPUs] QUEUES [8] SKIP_BUILD [0] PROFILE [release]
#              FLUSH [SYNC_FLUSH] flushDiskType of both brokers (ASYNC_FLUSH: the master syncs when its
#              slave waits for data, since it sends only durable bytes)
#              SEGMENT [134217728] mappedFileSizeCommitLog (stores are deleted after each run)
#              CARGO_TARGET_DIR [target] OUT [bench/cache/ha-<utc stamp>]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-3s}
QUEUES=${QUEUES:-8}
SHARDS=${SHARDS:-}
SEGMENT=${SEGMENT:-134217728}
FLUSH=${FLUSH:-SYNC_FLUSH}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROFILE=${PROFILE:-release}
OUT=${OUT:-$ROOT/bench/cache/ha-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
log() { echo "[ha-bench $(date -u +%H:%M:%S)] $*" >&2; }

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    (cd "$ROOT" && cargo build --release -p broker -p namesrv -p loadgen) >"$OUT/build.log" 2>&1 \
        || { tail -30 "$OUT/build.log"; exit 1; }
fi
BROKER="$TARGET/$PROFILE/broker"
NAMESRV="$TARGET/$PROFILE/namesrv"
LOADGEN="$TARGET/$PROFILE/loadgen"

PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

broker_config() { # DIR PORT ROLE ID NAMESRV
    {
        echo 'brokerClusterName = "DefaultCluster"'
        echo 'brokerName = "broker-a"'
        echo "brokerId = $4"
        echo 'brokerIP1 = "127.0.0.1"'
        echo 'bindAddress = "127.0.0.1"'
        echo "namesrvAddr = \"$5\""
        echo "listenPort = $2"
        echo "storePathRootDir = \"$1/store\""
        echo "brokerRole = \"$3\""
        echo "flushDiskType = \"$FLUSH\""
        echo 'autoCreateTopicEnable = true'
        # Smaller segments than the 1 GiB default: this machine's disk is shared and small.
        echo "mappedFileSizeCommitLog = $SEGMENT"
        [ -z "$SHARDS" ] || echo "shardCount = $SHARDS"
    } >"$1/broker.toml"
}

# run_case NAME WITH_SLAVE(0|1)
run_case() {
    local name=$1 with_slave=$2 dir="$OUT/$1"
    rm -rf "$dir"; mkdir -p "$dir/m" "$dir/s"
    local ns_port mport sport
    ns_port=$(free_port)
    # 100 apart: room for the shard-brokers' ports (listenPort + 4N) of both.
    mport=$((20000 + RANDOM % 20000)); sport=$((mport + 100))
    local ns="127.0.0.1:$ns_port"
    "$NAMESRV" --listen "$ns" >"$dir/namesrv.log" 2>&1 & PIDS+=($!)
    wait_port "$ns_port"
    if [ "$with_slave" = 1 ]; then
        broker_config "$dir/m" "$mport" SYNC_MASTER 0 "$ns"
        broker_config "$dir/s" "$sport" SLAVE 1 "$ns"
    else
        broker_config "$dir/m" "$mport" ASYNC_MASTER 0 "$ns"
    fi
    "$BROKER" --config "$dir/m/broker.toml" >"$dir/master.log" 2>&1 & PIDS+=($!)
    wait_port "$mport"
    if [ "$with_slave" = 1 ]; then
        "$BROKER" --config "$dir/s/broker.toml" >"$dir/slave.log" 2>&1 & PIDS+=($!)
        wait_port "$sport"
        # Every shard's stream connected: sends stop answering SLAVE_NOT_AVAILABLE.
        for _ in $(seq 1 100); do grep -q "replicating from" "$dir/slave.log" && break; sleep 0.2; done
        sleep 2
    fi
    "$LOADGEN" produce --namesrv "$ns" --topic BenchTopic --create-queues "$QUEUES" --size 1024 \
        --mode sync --inflight 64 --warmup "$WARMUP" --duration "$DURATION" --json "$dir/result.json" \
        >"$dir/loadgen.log" 2>&1 || log "loadgen failed for $name (see $dir/loadgen.log)"
    cleanup; PIDS=()
    sleep 1
    rm -rf "$dir/m/store" "$dir/s/store"
}

log "master alone (ASYNC_MASTER, $FLUSH)"
run_case alone 0
log "SYNC_MASTER + SLAVE ($FLUSH)"
run_case sync-pair 1
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
rows = {}
for name in ("alone", "sync-pair"):
    try:
        r = json.load(open(os.path.join(out, name, "result.json"))).get("produce", {})
    except (OSError, ValueError):
        r = {}
    rows[name] = r
def fmt(r):
    rt = r.get("rt_ms", {})
    return "TPS %8.0f  p50 %6.2f ms  p99 %6.2f ms  p999 %6.2f ms  failed %s" % (
        r.get("tps") or 0, rt.get("p50") or 0, rt.get("p99") or 0, rt.get("p999") or 0,
        (r.get("send_failed") or 0) + (r.get("response_failed") or 0))
for name, r in rows.items():
    print("%-10s %s" % (name, fmt(r)))
a, b = rows["alone"].get("tps"), rows["sync-pair"].get("tps")
if a and b:
    print("SYNC_MASTER+SLAVE / alone: %.0f%%" % (100.0 * b / a))
PY
log "results in $OUT"
