#!/usr/bin/env bash
# Side-by-side benchmark: our broker (release build) vs rocketmq-rust 1.0.0, on loopback, one machine,
# one run. Measures the disk's raw limits first, then runs scenarios S1..S6 (issue 5) against each
# broker with a fresh store per repeat, and prints one table of medians with our/peer ratios.
#
# Quick run:  DURATION=5s WARMUP=2s REPEATS=1 BACKLOG_MB=128 bench/compare.sh
# Full run (what the README quotes): bench/compare.sh
#
# Environment (defaults in brackets):
#   DURATION [20s] measured time per scenario run     WARMUP [5s]      REPEATS [3] (median reported)
#   SCENARIOS ["S1 S2 S3 S4 S5 S6"]                   PEERS ["ours rocketmq-rust"]
#   BACKLOG_MB [1024] S4 backlog size                 S5_RATE [20000] msg/s
#   QUEUES [8] queues of the benchmark topic          LOADGEN_THREADS [1]   CONNECTIONS [1]
#   S6_SHARDS ["1 <nproc>"] shard counts for S6       DISK_MB [1024] size of the raw O_DIRECT write test
#   SKIP_BUILD [0]   INSTALL_PEER [1] (cargo install rocketmq-rust when missing)
#   RMQ_ROOT [bench/cache/rocketmq-rust]   OUT [bench/cache/results-<utc stamp>]
#   CARGO_TARGET_DIR [target]   BASE_PORT [random in 20000..59999]
#   OUR_EXTRA_CONFIG [""] lines appended to our broker's config (e.g. "spinBeforeParkMicros = 200")
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-20s}
WARMUP=${WARMUP:-5s}
REPEATS=${REPEATS:-3}
SCENARIOS=${SCENARIOS:-"S1 S2 S3 S4 S5 S6"}
PEERS=${PEERS:-"ours rocketmq-rust"}
BACKLOG_MB=${BACKLOG_MB:-1024}
S5_RATE=${S5_RATE:-20000}
OUR_EXTRA_CONFIG=${OUR_EXTRA_CONFIG:-}
QUEUES=${QUEUES:-8}
LOADGEN_THREADS=${LOADGEN_THREADS:-1}
CONNECTIONS=${CONNECTIONS:-1}
NPROC=$(nproc)
S6_SHARDS=${S6_SHARDS:-"1 $NPROC"}
DISK_MB=${DISK_MB:-1024}
SKIP_BUILD=${SKIP_BUILD:-0}
INSTALL_PEER=${INSTALL_PEER:-1}
RMQ_ROOT=${RMQ_ROOT:-$ROOT/bench/cache/rocketmq-rust}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/cache/results-$STAMP}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BASE_PORT=${BASE_PORT:-$((20000 + RANDOM % 40000))}
SIZE=1024

mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"   # peer  scenario  repeat  json-file
: >"$RESULTS"
NOTES="$OUT/notes.txt"
: >"$NOTES"
log() { echo "[compare $(date -u +%H:%M:%S)] $*" >&2; }
note() { echo "$*" >>"$NOTES"; log "NOTE: $*"; }

PIDS=()
cleanup() {
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT INT TERM

# ---------------------------------------------------------------- build
if [ "$SKIP_BUILD" != 1 ]; then
    log "building ours (release): broker namesrv loadgen"
    (cd "$ROOT" && cargo build --release -p broker -p namesrv -p loadgen) >"$OUT/build.log" 2>&1 \
        || { tail -30 "$OUT/build.log"; exit 1; }
fi
LOADGEN="$TARGET/release/loadgen"
OUR_BROKER="$TARGET/release/broker"
OUR_NAMESRV="$TARGET/release/namesrv"
for bin in "$LOADGEN" "$OUR_BROKER" "$OUR_NAMESRV"; do
    [ -x "$bin" ] || { log "missing $bin (build failed?)"; exit 1; }
done

RMQ_NAMESRV="$RMQ_ROOT/bin/rocketmq-namesrv-rust"
RMQ_BROKER="$RMQ_ROOT/bin/rocketmq-broker-rust"
if [[ " $PEERS " == *" rocketmq-rust "* ]]; then
    if [ ! -x "$RMQ_BROKER" ] && [ "$INSTALL_PEER" = 1 ]; then
        log "installing rocketmq-rust 1.0.0 into $RMQ_ROOT (slow; log in $OUT/peer-install.log)"
        nice cargo install rocketmq-namesrv rocketmq-broker --version 1.0.0 --root "$RMQ_ROOT" \
            >"$OUT/peer-install.log" 2>&1 || true
    fi
    if [ ! -x "$RMQ_BROKER" ] || [ ! -x "$RMQ_NAMESRV" ]; then
        note "rocketmq-rust 1.0.0 not available ($RMQ_BROKER missing): peer column skipped"
        PEERS=${PEERS//rocketmq-rust/}
    fi
fi

# ---------------------------------------------------------------- raw disk limits (same filesystem as the stores)
DISK_DIR="$OUT/disk"
mkdir -p "$DISK_DIR"
log "raw disk: O_DIRECT sequential write of ${DISK_MB} MiB, then 4 KiB write+fdatasync latency"
DISK_WRITE_MBS=$(dd if=/dev/zero of="$DISK_DIR/seq" bs=1M count="$DISK_MB" oflag=direct conv=fdatasync 2>&1 \
    | awk '/copied/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/ && $(i+1) == "s,") secs = $i; bytes = $1 }
           END { if (secs > 0) printf "%.0f", bytes / secs / 1e6; else print "n/a" }')
rm -f "$DISK_DIR/seq"
FSYNC_STATS=$(python3 - "$DISK_DIR/sync" <<'EOF'
import os, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
block = b"x" * 4096
samples = []
for i in range(2000):
    t = time.perf_counter()
    os.write(fd, block)
    os.fdatasync(fd)
    samples.append(time.perf_counter() - t)
os.close(fd)
os.unlink(path)
samples.sort()
avg = sum(samples) / len(samples)
print(f"{avg*1e3:.3f} {samples[len(samples)//2]*1e3:.3f} {samples[int(len(samples)*0.99)]*1e3:.3f}")
EOF
)
read -r FSYNC_AVG FSYNC_P50 FSYNC_P99 <<<"$FSYNC_STATS"
log "disk: O_DIRECT write ${DISK_WRITE_MBS} MB/s; 4 KiB append+fdatasync avg ${FSYNC_AVG} ms p50 ${FSYNC_P50} p99 ${FSYNC_P99}"

# ---------------------------------------------------------------- cluster control
NS_PORT=$BASE_PORT
BROKER_PORT=$((BASE_PORT + 11))   # uses BROKER_PORT-2 .. BROKER_PORT+1
NAMESRV_ADDR="127.0.0.1:$NS_PORT"
NS_PID=""
BROKER_PID=""

wait_port_free() {
    local port=$1 i
    for i in $(seq 1 100); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

wait_port_open() {
    local port=$1 i
    for i in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

stop_cluster() {
    local pid
    for pid in "$BROKER_PID" "$NS_PID"; do
        [ -n "$pid" ] || continue
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    BROKER_PID=""
    NS_PID=""
    PIDS=()
    for port in "$NS_PORT" $((BROKER_PORT - 2)) "$BROKER_PORT" $((BROKER_PORT + 1)); do wait_port_free "$port" || true; done
}

# start_cluster PEER FLUSH SHARDS RUNDIR: fresh store, waits until a send works.
start_cluster() {
    local peer=$1 flush=$2 shards=$3 dir=$4
    rm -rf "$dir"
    mkdir -p "$dir/store"
    case "$peer" in
    ours)
        {
            echo 'brokerClusterName = "DefaultCluster"'
            echo 'brokerName = "broker-a"'
            echo 'brokerId = 0'
            echo 'brokerIP1 = "127.0.0.1"'
            echo 'bindAddress = "127.0.0.1"'
            echo "namesrvAddr = \"$NAMESRV_ADDR\""
            echo "listenPort = $BROKER_PORT"
            echo "storePathRootDir = \"$dir/store\""
            echo 'brokerRole = "ASYNC_MASTER"'
            echo "flushDiskType = \"$flush\""
            echo 'autoCreateTopicEnable = true'
            [ "$shards" = all ] || echo "shardCount = $shards"
            [ -z "$OUR_EXTRA_CONFIG" ] || printf '%b\n' "$OUR_EXTRA_CONFIG"
        } >"$dir/broker.toml"
        "$OUR_NAMESRV" --listen "$NAMESRV_ADDR" >"$dir/namesrv.log" 2>&1 &
        NS_PID=$!
        wait_port_open "$NS_PORT" || { log "our name server did not listen"; tail -5 "$dir/namesrv.log" >&2; }
        "$OUR_BROKER" --config "$dir/broker.toml" >"$dir/broker.log" 2>&1 &
        BROKER_PID=$!
        ;;
    rocketmq-rust)
        cat >"$dir/broker.toml" <<EOF
[broker]
namesrvAddr = "$NAMESRV_ADDR"
brokerIp1 = "127.0.0.1"
listenPort = $BROKER_PORT
storePathRootDir = "$dir/store"

[broker.brokerIdentity]
brokerName = "broker-a"
brokerClusterName = "DefaultCluster"
brokerId = 0

[store]
brokerRole = "ASYNC_MASTER"
flushDiskType = "$flush"
haListenPort = $((BROKER_PORT + 1))
storePathRootDir = "$dir/store"
EOF
        # Without --rocketmqHome its name server exits at once ("Service lifecycle operation failed").
        "$RMQ_NAMESRV" --listenPort "$NS_PORT" --bindAddress 127.0.0.1 --rocketmqHome "$dir" >"$dir/namesrv.log" 2>&1 &
        NS_PID=$!
        wait_port_open "$NS_PORT" || { log "rocketmq-rust name server did not listen"; tail -5 "$dir/namesrv.log" >&2; }
        ROCKETMQ_HOME="$dir" "$RMQ_BROKER" -c "$dir/broker.toml" >"$dir/broker.log" 2>&1 &
        BROKER_PID=$!
        ;;
    esac
    PIDS=("$BROKER_PID" "$NS_PID")
    # Ready when the topic can be created with QUEUES queues (the broker must have registered first);
    # a broker that refuses UPDATE_AND_CREATE_TOPIC gets the topic auto-created by a send instead.
    local i
    for i in $(seq 1 60); do
        if ! kill -0 "$BROKER_PID" 2>/dev/null; then
            log "$peer broker exited; log tail:"; tail -20 "$dir/broker.log" >&2; return 1
        fi
        if "$LOADGEN" produce --namesrv "$NAMESRV_ADDR" --topic BenchTopic --create-queues "$QUEUES" \
            --count 1 --timeout 3s >"$dir/ready.log" 2>&1; then
            return 0
        fi
        if [ "$i" -ge 15 ] && "$LOADGEN" produce --namesrv "$NAMESRV_ADDR" --topic BenchTopic --count 1 \
            --timeout 3s >"$dir/ready-auto.log" 2>&1; then
            note "$peer: --create-queues failed ($(grep -m1 'loadgen:' "$dir/ready.log")), topic auto-created instead"
            return 0
        fi
        sleep 1
    done
    log "$peer broker never became ready; see $dir"
    tail -5 "$dir/ready.log" >&2
    return 1
}

LG_COMMON=(--namesrv "$NAMESRV_ADDR" --topic BenchTopic --threads "$LOADGEN_THREADS" --connections "$CONNECTIONS")
PRODUCE=(--size "$SIZE")
TIMED=(--warmup "$WARMUP" --duration "$DURATION")

# run_scenario PEER SCENARIO REPEAT: one run with a fresh store; records the JSON.
run_scenario() {
    local peer=$1 sc=$2 rep=$3 flush=ASYNC_FLUSH shards=all variant=""
    case "$sc" in S2 | S5) flush=SYNC_FLUSH ;; esac
    local runs=("$sc")
    if [ "$sc" = S6 ]; then
        [ "$peer" = ours ] || return 0
        runs=()
        for s in $S6_SHARDS; do runs+=("S6-shards$s"); done
    fi
    for variant in "${runs[@]}"; do
        [[ "$variant" == S6-shards* ]] && shards=${variant#S6-shards}
        local dir="$OUT/run/$peer-$variant-$rep" json="$OUT/$peer-$variant-$rep.json"
        log "$peer $variant repeat $rep ($flush, shards $shards)"
        start_cluster "$peer" "$flush" "$shards" "$dir" || { note "$peer $variant repeat $rep: broker did not start"; stop_cluster; continue; }
        local ok=1
        case "$sc" in
        S1 | S2 | S6)
            "$LOADGEN" produce "${LG_COMMON[@]}" "${PRODUCE[@]}" "${TIMED[@]}" --mode sync --inflight 64 --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0 ;;
        S3)
            "$LOADGEN" produce "${LG_COMMON[@]}" "${PRODUCE[@]}" "${TIMED[@]}" --mode sync --inflight 16 --batch 32 --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0 ;;
        S4)
            local count=$((BACKLOG_MB * 1024 * 1024 / SIZE))
            "$LOADGEN" produce "${LG_COMMON[@]}" "${PRODUCE[@]}" --count "$count" --mode sync --inflight 16 --batch 32 \
                --json "$dir/preload.json" >"$dir/preload.log" 2>&1 || ok=0
            [ "$ok" = 1 ] && { "$LOADGEN" consume "${LG_COMMON[@]}" --count "$count" --from earliest --pull-batch 32 \
                --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0; } ;;
        S5)
            "$LOADGEN" e2e "${LG_COMMON[@]}" "${PRODUCE[@]}" "${TIMED[@]}" --rate "$S5_RATE" --mode async --inflight 512 \
                --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0 ;;
        esac
        stop_cluster
        if [ "$ok" = 1 ] && [ -s "$json" ]; then
            printf '%s\t%s\t%s\t%s\n' "$peer" "$variant" "$rep" "$json" >>"$RESULTS"
            rm -rf "$dir/store"
        else
            note "$peer $variant repeat $rep failed: $(tail -2 "$dir/loadgen.log" "$dir/preload.log" 2>/dev/null | tr '\n' ' ')"
        fi
    done
}

for peer in $PEERS; do
    for sc in $SCENARIOS; do
        for rep in $(seq 1 "$REPEATS"); do
            run_scenario "$peer" "$sc" "$rep"
        done
    done
done

# ---------------------------------------------------------------- table
python3 - "$RESULTS" "$NOTES" "$OUT/table.md" <<EOF
import json, statistics, sys
results, notes, table_path = sys.argv[1], sys.argv[2], sys.argv[3]
runs = {}
for line in open(results):
    peer, scenario, rep, path = line.rstrip("\n").split("\t")
    runs.setdefault((peer, scenario), []).append(json.load(open(path)))

def median(peer, scenario, pick):
    values = [pick(r) for r in runs.get((peer, scenario), [])]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

P = lambda key: lambda r: r.get("produce", {}).get(key)
RT = lambda key: lambda r: r.get("produce", {}).get("rt_ms", {}).get(key)
C = lambda key: lambda r: r.get("consume", {}).get(key)
E2E = lambda key: lambda r: r.get("consume", {}).get("e2e_ms", {}).get(key)
FAILS = lambda r: r.get("produce", {}).get("send_failed", 0) + r.get("produce", {}).get("response_failed", 0)
rows = [
    ("S1 sync send, ASYNC_FLUSH, 64 in flight", "S1", "send TPS", P("tps"), True),
    ("", "S1", "p99 RT ms", RT("p99"), False),
    ("", "S1", "failed sends", FAILS, False),
    ("S2 sync send, SYNC_FLUSH, 64 in flight", "S2", "send TPS", P("tps"), True),
    ("", "S2", "p99 RT ms", RT("p99"), False),
    ("", "S2", "failed sends", FAILS, False),
    ("S3 batch 32, ASYNC_FLUSH", "S3", "MB/s stored", P("mb_per_s"), True),
    ("", "S3", "send TPS (msgs)", P("tps"), True),
    ("S4 consume ${BACKLOG_MB} MiB backlog", "S4", "MB/s consumed", C("mb_per_s"), True),
    ("S5 e2e ${S5_RATE} msg/s, SYNC_FLUSH", "S5", "e2e p99 ms", E2E("p99"), False),
    ("", "S5", "e2e p999 ms", E2E("p999"), False),
    ("", "S5", "send p999 RT ms", RT("p999"), False),
    ("", "S5", "send TPS achieved", P("tps"), True),
    ("", "S5", "due but never sent", P("missed_open_loop"), False),
]
shard_runs = sorted({s for (_, s) in runs if s.startswith("S6-shards")}, key=lambda s: int(s[9:]))
for s in shard_runs:
    rows.append((f"S6 S1 with {s[9:]} shard(s) (ours)", s, "send TPS", P("tps"), True))

def fmt(v):
    if v is None:
        return "-"
    if float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3f}"

out = []
out.append("Machine: ${NPROC} cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB RAM; run ${STAMP}")
out.append("Raw disk (same filesystem): O_DIRECT sequential write ${DISK_WRITE_MBS} MB/s; 4 KiB append+fdatasync avg ${FSYNC_AVG} ms, p50 ${FSYNC_P50} ms, p99 ${FSYNC_P99} ms")
out.append("Settings: DURATION=${DURATION} WARMUP=${WARMUP} REPEATS=${REPEATS} (median), 1 KiB bodies, QUEUES=${QUEUES}, LOADGEN_THREADS=${LOADGEN_THREADS}, CONNECTIONS=${CONNECTIONS}")
out.append("")
out.append("| scenario | metric | ours | rocketmq-rust 1.0.0 | ours / peer |")
out.append("| --- | --- | ---: | ---: | ---: |")
for title, scenario, metric, pick, higher_better in rows:
    ours = median("ours", scenario, pick)
    peer = median("rocketmq-rust", scenario, pick)
    ratio = f"{ours / peer:.2f}x" if ours is not None and peer else "-"
    arrow = "" if higher_better else " (lower is better)"
    out.append(f"| {title} | {metric}{arrow} | {fmt(ours)} | {fmt(peer)} | {ratio} |")
if len(shard_runs) >= 2:
    base = median("ours", shard_runs[0], P("tps"))
    top = median("ours", shard_runs[-1], P("tps"))
    if base and top:
        out.append("")
        out.append(f"S6 scaling: {shard_runs[-1][9:]} shards / {shard_runs[0][9:]} shard = {top / base:.2f}x"
                   + (" (loadgen shares these cores; see README)" if ${NPROC} <= 2 else ""))
extra = [l.strip() for l in open(notes) if l.strip()]
if extra:
    out.append("")
    out.append("Notes:")
    out.extend(f"- {l}" for l in extra)
text = "\n".join(out)
open(table_path, "w").write(text + "\n")
print(text)
EOF
log "results in $OUT (table.md, per-run JSON, logs under run/)"
