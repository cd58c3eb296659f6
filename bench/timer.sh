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
LOADGEN=$BIN/loadgen
LOAD_PID=""
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
trap 'stop_pair $LOAD_PID; rm -rf "$WORK"' EXIT

drain_s=$(( TIMER_DELAY_MS / 1000 + 5 ))
for round in $(seq 1 "$ROUNDS"); do
    start_pair "$BIN" "flushDiskType = \"$FLUSH\"
$EXTRA_CONFIG" TimerTopic LoadTopic
    "$BIN/loadgen" produce --namesrv "$NS" --topic LoadTopic --size 1024 --rate "$LOAD_RATE" --mode async \
        --inflight 256 --duration "$DURATION" --warmup 2s >/dev/null 2>&1 &
    LOAD_PID=$!
    line=$("$BIN/loadgen" e2e --namesrv "$NS" --topic TimerTopic --size 256 --rate "$TIMER_RATE" --mode async \
        --inflight 256 --timer-delay-ms "$TIMER_DELAY_MS" --duration "$DURATION" --warmup 2s \
        --drain "${drain_s}s" 2>&1 | grep '^Consume TPS' | tail -1)
    stop_pair "$LOAD_PID"
    LOAD_PID=""
    echo "round $round (timers ${TIMER_RATE}/s due after ${TIMER_DELAY_MS} ms, plain load ${LOAD_RATE}/s, $FLUSH): lateness $line"
done
