#!/usr/bin/env bash
# Cost of compaction: p99 send latency on a compaction topic with compaction off and on, and the
# compaction passes' speed (records/s, from the broker's "compacted" log lines). Each round: a name
# server and a one-shard broker (release build) on a fresh store, topic CT made a compaction topic in
# the stopped broker's topic table, then `loadgen produce` at RATE msg/s with 16-byte keys (every
# message a new key: the worst case, each pass rewrites the whole compacted log) for DURATION.
#
#   bench/compaction.sh [BIN_DIR]       (default target/release; build with
#                                        cargo build --release -p broker -p namesrv -p loadgen)
# Environment: RATE [10000], DURATION [20s], ROUNDS [2], INTERVAL [1000] (compactionScheduleInternal, ms).
set -euo pipefail

BIN=$(cd "${1:-target/release}" && pwd)
RATE=${RATE:-10000}
DURATION=${DURATION:-20s}
ROUNDS=${ROUNDS:-2}
INTERVAL=${INTERVAL:-1000}
WORK=$(mktemp -d /tmp/compaction-bench.XXXXXX)
LOADGEN=$BIN/loadgen
export QUEUES=4
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
trap 'stop_pair; rm -rf "$WORK"' EXIT

for round in $(seq 1 "$ROUNDS"); do
    for enable in false true; do
        start_pair "$BIN" "shardCount = 1
enableCompaction = $enable
compactionScheduleInternal = $INTERVAL" CT
        kill "$BROKER_PID"; wait "$BROKER_PID" || true
        python3 - "$WORK/store/config/topics.json" <<'PY'
import json, sys
p = sys.argv[1]
t = json.load(open(p))
t["topicConfigTable"]["CT"]["attributes"] = {"cleanup.policy": "COMPACTION"}
json.dump(t, open(p, "w"))
PY
        "$BIN/broker" --config "$WORK/broker.toml" >>"$WORK/broker.log" 2>&1 &
        BROKER_PID=$!
        for _ in $(seq 1 50); do
            "$LOADGEN" produce --namesrv "$NS" --topic Ready --count 1 --size 16 --timeout 2s >/dev/null 2>&1 && break
            sleep 0.2
        done
        line=$("$LOADGEN" produce --namesrv "$NS" --topic CT --size 256 --key-size 16 --rate "$RATE" \
            --mode async --inflight 256 --duration "$DURATION" --warmup 2s 2>&1 | grep '^Send TPS' | tail -1)
        echo "round $round enableCompaction=$enable: $line"
        if [ "$enable" = true ]; then
            python3 - "$WORK/broker.log" <<'PY'
import re, sys
recs = ms = passes = 0
for l in open(sys.argv[1]):
    m = re.search(r"compacted CT/\d+ up to offset \d+ \((\d+) records kept, (\d+) new scanned.*\) in (\d+) ms", l)
    if m:
        passes += 1
        recs += int(m.group(1))
        ms += int(m.group(3))
print(f"  {passes} passes, {recs} records written in {ms} ms of passes: "
      f"{recs / (ms / 1000) if ms else 0:.0f} records/s")
PY
        fi
        stop_pair
        rm -f "$WORK/broker.log"
    done
done
