#!/usr/bin/env bash
# Same-run A/B of two builds of our broker: runs the scenarios of compare.sh named in SCENARIOS (default
# S2, sync send with SYNC_FLUSH and 64 in flight, and S5, e2e at a fixed rate with SYNC_FLUSH) against
# build A then build B, ROUNDS times interleaved, each run on a fresh store, and prints one line per
# run. On a noisy machine only such interleaved comparisons mean much.
#
#   bench/ab.sh OLD_RELEASE_DIR NEW_RELEASE_DIR [ROUNDS]
#   e.g. git worktree add ../base <commit> && (cd ../base && cargo build --release -p broker -p namesrv)
#        bench/ab.sh ../base/target/release target/release 5
#
# Environment: SCENARIOS ["s2 s5"; also s1 (S2 with ASYNC_FLUSH), s3 (batches of 32, ASYNC_FLUSH) and
# s4 (consume a backlog of BACKLOG_MB [512] MiB)], DURATION [8s], WARMUP [2s], S5_RATE [20000],
# EXTRA_CONFIG [""] (both sides), A_CONFIG / B_CONFIG [""] (one side: e.g. the same build twice with
# A_CONFIG='shardRouting = "forward"' compares the routing modes), A_QUEUES / B_QUEUES [8] write queues
# of the topic per broker (with 2 shard-brokers, B_QUEUES=4 keeps 8 queues in all).
# loadgen is taken from NEW_RELEASE_DIR unless LOADGEN names one. Each figure ends with the broker's
# and name server's CPU time per message ("cpu N us/msg", utime + stime over the loadgen run).
set -euo pipefail

A=$(cd "${1:?old release dir}" && pwd)
B=$(cd "${2:?new release dir}" && pwd)
ROUNDS=${3:-3}
LOADGEN=${LOADGEN:-$B/loadgen}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-2s}
S5_RATE=${S5_RATE:-20000}
SCENARIOS=${SCENARIOS:-s2 s5}
FLUSH=SYNC_FLUSH
EXTRA_CONFIG=${EXTRA_CONFIG:-}
WORK=$(mktemp -d /tmp/ab.XXXXXX)
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
trap 'stop_pair; rm -rf "$WORK"' EXIT
require_disk_room "$WORK"

# start BIN_DIR SIDE_CONFIG: a name server and a broker with a fresh store; sets NS (address).
start() { start_pair "$1" "flushDiskType = \"$FLUSH\"
$EXTRA_CONFIG
$2" AbTopic; }
stop() { stop_pair; }

COMMON=(--topic AbTopic --size 1024 --warmup "$WARMUP" --duration "$DURATION" --json "$WORK/run.json")
send_line() { grep '^Send TPS' | tail -1 | awk -F'|' '{print $1 "|" $5}'; }

# scenario NAME BIN_DIR SIDE_CONFIG: one run of that scenario on a fresh broker from BIN_DIR; prints
# its figures.
scenario() {
    local name=$1 bin=$2 out t0
    case $name in s1 | s3 | s4) FLUSH=ASYNC_FLUSH ;; *) FLUSH=SYNC_FLUSH ;; esac
    start "$bin" "$3"
    rm -f "$WORK/run.json"
    t0=$(cpu_ticks "$BROKER_PID" "$NS_PID")
    case $name in
    s1 | s2) out=$("$LOADGEN" produce --namesrv "$NS" "${COMMON[@]}" --mode sync --inflight 64 2>&1 | send_line) ;;
    s3) out=$("$LOADGEN" produce --namesrv "$NS" "${COMMON[@]}" --mode sync --inflight 16 --batch 32 2>&1 | send_line) ;;
    s4)
        local count=$((${BACKLOG_MB:-512} * 1024))
        "$LOADGEN" produce --namesrv "$NS" --topic AbTopic --size 1024 --count "$count" --mode sync --inflight 16 \
            --batch 32 >/dev/null 2>&1
        t0=$(cpu_ticks "$BROKER_PID" "$NS_PID")
        out=$("$LOADGEN" consume --namesrv "$NS" --topic AbTopic --count "$count" --from earliest --pull-batch 32 \
            --json "$WORK/run.json" 2>&1 |
            grep '^Consume TPS' | tail -1 | awk -F'|' '{print $2}') ;;
    s5) out=$("$LOADGEN" e2e --namesrv "$NS" "${COMMON[@]}" --rate "$S5_RATE" --mode async --inflight 512 2>&1 |
        grep '^Consume TPS' | tail -1 | awk -F'|' '{print $5 "|" $6}') ;;
    *) out="unknown scenario" ;;
    esac
    if [ -f "$WORK/run.json" ]; then
        out="$out| cpu $(cpu_us_per_msg $(($(cpu_ticks "$BROKER_PID" "$NS_PID") - t0)) "$WORK/run.json") us/msg"
    fi
    stop
    echo "${name^^} [$out]"
}

for round in $(seq 1 "$ROUNDS"); do
    for side in A B; do
        bin=$A side_config=${A_CONFIG:-} QUEUES=${A_QUEUES:-8}
        [ "$side" = B ] && bin=$B side_config=${B_CONFIG:-} QUEUES=${B_QUEUES:-8}
        line="round $round $side:"
        for name in $SCENARIOS; do
            line="$line $(scenario "$name" "$bin" "$side_config")"
        done
        echo "$line"
    done
done
