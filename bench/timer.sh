#!/usr/bin/env bash
# Timer-message accuracy under load: a name server and a broker (release build) on a fresh store,
# `loadgen e2e --timer-delay-ms` sending timer messages at TIMER_RATE/s that are due TIMER_DELAY_MS after
# their send, while a second loadgen sends plain messages at LOAD_RATE/s to another topic. Timer
# messages are stamped with their due time, so the e2e percentiles printed are the lateness of each
# delivery (time from due to consumed). Prints the e2e summary line of each round.
#
#   bench/timer.sh [BIN_DIR]            (default target/release; build with
#                                        cargo build --release -p broker -p namesrv -p loadgen)
# Environment: TIMER_RATE [2000], TIMER_DELAY_MS [2000], LOAD_RATE [20000], DURATION [20s], ROUNDS [3],
# FLUSH [ASYNC_FLUSH], EXTRA_CONFIG [""].
set -euo pipefail

BIN=$(cd "${1:-target/release}" && pwd)
TIMER_RATE=${TIMER_RATE:-2000}
TIMER_DELAY_MS=${TIMER_DELAY_MS:-2000}
LOAD_RATE=${LOAD_RATE:-20000}
DURATION=${DURATION:-20s}
ROUNDS=${ROUNDS:-3}
FLUSH=${FLUSH:-ASYNC_FLUSH}
EXTRA_CONFIG=${EXTRA_CONFIG:-}
WORK=$(mktemp -d /tmp/timer-bench.XXXXXX)
NS_PID="" BROKER_PID="" LOAD_PID=""

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

stop() {
    for p in $LOAD_PID $BROKER_PID $NS_PID; do kill "$p" 2>/dev/null || true; done
    for p in $LOAD_PID $BROKER_PID $NS_PID; do wait "$p" 2>/dev/null || true; done
    NS_PID="" BROKER_PID="" LOAD_PID=""
    rm -rf "$WORK/store"
}
trap 'stop; rm -rf "$WORK"' EXIT

start() {
    local ns_port broker_port
    ns_port=$(free_port)
    broker_port=$(free_port)
    NS="127.0.0.1:$ns_port"
    mkdir -p "$WORK/store"
    cat >"$WORK/broker.toml" <<EOF
brokerClusterName = "DefaultCluster"
brokerName = "broker-timer"
brokerIP1 = "127.0.0.1"
bindAddress = "127.0.0.1"
namesrvAddr = "$NS"
listenPort = $broker_port
storePathRootDir = "$WORK/store"
flushDiskType = "$FLUSH"
autoCreateTopicEnable = true
$EXTRA_CONFIG
EOF
    "$BIN/namesrv" --listen "$NS" >"$WORK/namesrv.log" 2>&1 &
    NS_PID=$!
    sleep 0.5
    "$BIN/broker" --config "$WORK/broker.toml" >"$WORK/broker.log" 2>&1 &
    BROKER_PID=$!
    for topic in TimerTopic LoadTopic; do
        for _ in $(seq 1 50); do
            if "$BIN/loadgen" produce --namesrv "$NS" --topic "$topic" --create-queues 8 --count 1 --size 16 \
                --timeout 2s >/dev/null 2>&1; then
                continue 2
            fi
            sleep 0.2
        done
        echo "broker did not become ready; see $WORK/broker.log" >&2
        return 1
    done
}

drain_s=$(( TIMER_DELAY_MS / 1000 + 5 ))
for round in $(seq 1 "$ROUNDS"); do
    start
    "$BIN/loadgen" produce --namesrv "$NS" --topic LoadTopic --size 1024 --rate "$LOAD_RATE" --mode async \
        --inflight 256 --duration "$DURATION" --warmup 2s >/dev/null 2>&1 &
    LOAD_PID=$!
    line=$("$BIN/loadgen" e2e --namesrv "$NS" --topic TimerTopic --size 256 --rate "$TIMER_RATE" --mode async \
        --inflight 256 --timer-delay-ms "$TIMER_DELAY_MS" --duration "$DURATION" --warmup 2s \
        --drain "${drain_s}s" 2>&1 | grep '^Consume TPS' | tail -1)
    stop
    echo "round $round (timers ${TIMER_RATE}/s due after ${TIMER_DELAY_MS} ms, plain load ${LOAD_RATE}/s, $FLUSH): lateness $line"
done
