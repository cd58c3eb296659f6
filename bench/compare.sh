#!/usr/bin/env bash
# Side-by-side benchmark on loopback, one machine: Apache RocketMQ 4.9.8's own name server and broker
# (the reference peer, from the kit in shared/apache-rocketmq), our broker with shards as brokers
# (shardRouting = "direct", the default), our broker with one broker per process (shardRouting =
# "forward"), and optionally rocketmq-rust 1.0.0. Measures the disk's raw limits first, then runs
# scenarios S1..S6 (docs/performance.md) against each peer with a fresh store per repeat, and prints
# one table of medians with ratios against the first peer; writes SVG charts next to it.
#
# Quick run (about 5 minutes):
#   DURATION=5s WARMUP=2s REPEATS=1 BACKLOG_MB=128 bench/compare.sh
# Full run (about 40 minutes; what the docs quote):
#   bench/compare.sh
#
# Environment (defaults in brackets):
#   DURATION [20s] measured time per scenario run     WARMUP [5s]      REPEATS [3] (median reported)
#   SCENARIOS ["S1 S2 S3 S4 S5 S6"]                   PEERS ["apache ours ours-forward"]
#     peers: apache, ours (shardRouting = "direct"), ours-forward (shardRouting = "forward"),
#     rocketmq-rust (optional; answers ~1,500 msg/s with ~40 ms stalls against our loadgen)
#   BACKLOG_MB [1024] S4 backlog size                 S5_RATE [20000] msg/s
#   PULL_BATCH [32] S4's maxMsgNums per pull (Java's pullBatchSize); above 32 both brokers get it as
#     maxTransferCountOnMessageInMemory, since each caps a pull at 32 messages by default
#   QUEUES [8] queues of the benchmark topic in all (direct mode: QUEUES / OUR_SHARDS per shard-broker)
#   OUR_SHARDS [nproc] shardCount of our broker (S1..S5)
#   LOADGEN_THREADS [1]   CONNECTIONS [1]
#   S6_SHARDS ["1 <nproc>"] shard counts for S6 (ours and ours-forward only)
#   DISK_MB [1024] size of the raw O_DIRECT write test
#   SKIP_BUILD [0]   INSTALL_PEER [0] (1: cargo install rocketmq-rust when missing)
#   APACHE_KIT [shared/apache-rocketmq, else /work/shared/apache-rocketmq]; its JVM settings come from
#     the kit's defaults (G1, 2 GiB pre-touched heap) unless RMQ_BROKER_HEAP, RMQ_BROKER_DIRECT,
#     RMQ_PRETOUCH or JAVA_OPT_EXT say otherwise; the table's header prints the ones used
#   RMQ_ROOT [bench/cache/rocketmq-rust]   OUT [bench/cache/results-<utc stamp>]
#   CARGO_TARGET_DIR [target]   BASE_PORT [random in 20000..59999]
#   OUR_EXTRA_CONFIG [""] lines appended to our broker's config (both ours peers)
# Output in OUT: table.md (also printed), results.tsv, per-run JSON (loadgen --json), charts
# (ratio-tps.svg, ratio-p99.svg, ratio-cpu.svg, latency-<scenario>.svg), logs under run/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-20s}
WARMUP=${WARMUP:-5s}
REPEATS=${REPEATS:-3}
SCENARIOS=${SCENARIOS:-"S1 S2 S3 S4 S5 S6"}
PEERS=${PEERS:-"apache ours ours-forward"}
BACKLOG_MB=${BACKLOG_MB:-1024}
S5_RATE=${S5_RATE:-20000}
PULL_BATCH=${PULL_BATCH:-32}
OUR_EXTRA_CONFIG=${OUR_EXTRA_CONFIG:-}
QUEUES=${QUEUES:-8}
LOADGEN_THREADS=${LOADGEN_THREADS:-1}
CONNECTIONS=${CONNECTIONS:-1}
NPROC=$(nproc)
OUR_SHARDS=${OUR_SHARDS:-$NPROC}
S6_SHARDS=${S6_SHARDS:-"1 $NPROC"}
DISK_MB=${DISK_MB:-1024}
SKIP_BUILD=${SKIP_BUILD:-0}
INSTALL_PEER=${INSTALL_PEER:-0}
if [ -z "${APACHE_KIT:-}" ]; then
    APACHE_KIT=$ROOT/shared/apache-rocketmq
    [ -x "$APACHE_KIT/broker.sh" ] || APACHE_KIT=/work/shared/apache-rocketmq
fi
RMQ_ROOT=${RMQ_ROOT:-$ROOT/bench/cache/rocketmq-rust}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/cache/results-$STAMP}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BASE_PORT=${BASE_PORT:-$((20000 + RANDOM % 40000))}
SIZE=1024
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"   # cpu_ticks, cpu_us_per_msg, require_disk_room

mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"   # peer  scenario  repeat  json-file  cpu-us-per-msg
: >"$RESULTS"
NOTES="$OUT/notes.txt"
: >"$NOTES"
log() { echo "[compare $(date -u +%H:%M:%S)] $*" >&2; }
note() { echo "$*" >>"$NOTES"; log "NOTE: $*"; }

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

if [[ " $PEERS " == *" apache "* ]] && [ ! -x "$APACHE_KIT/broker.sh" ]; then
    note "Apache RocketMQ kit not found at $APACHE_KIT (set APACHE_KIT): apache column skipped"
    PEERS=${PEERS//apache/}
fi
RMQ_NAMESRV="$RMQ_ROOT/bin/rocketmq-namesrv-rust"
RMQ_BROKER="$RMQ_ROOT/bin/rocketmq-broker-rust"
if [[ " $PEERS " == *" rocketmq-rust "* ]]; then
    if [ ! -x "$RMQ_BROKER" ] && [ "$INSTALL_PEER" = 1 ]; then
        log "installing rocketmq-rust 1.0.0 into $RMQ_ROOT (slow; log in $OUT/peer-install.log)"
        nice cargo install rocketmq-namesrv rocketmq-broker --version 1.0.0 --root "$RMQ_ROOT" \
            >"$OUT/peer-install.log" 2>&1 || true
    fi
    if [ ! -x "$RMQ_BROKER" ] || [ ! -x "$RMQ_NAMESRV" ]; then
        note "rocketmq-rust 1.0.0 not available ($RMQ_BROKER missing; INSTALL_PEER=1 installs it): column skipped"
        PEERS=${PEERS//rocketmq-rust/}
    else
        note "rocketmq-rust 1.0.0 answers about 1,500 msg/s with stalls of about 40 ms against our loadgen whatever the load; its figures say more about that release than about the others"
    fi
fi
read -r -a PEER_LIST <<<"$PEERS"
[ "${#PEER_LIST[@]}" -gt 0 ] || { log "no peer left to run"; exit 1; }
if [ $((QUEUES % OUR_SHARDS)) != 0 ] && [[ " $PEERS " == *" ours "* ]]; then
    note "QUEUES=$QUEUES is not a multiple of OUR_SHARDS=$OUR_SHARDS: ours (direct) gets $(((QUEUES + OUR_SHARDS - 1) / OUR_SHARDS)) per shard-broker"
fi
# ---------------------------------------------------------------- raw disk limits (same filesystem as the stores)
require_disk_room "$OUT"
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
BROKER_PORT=$((BASE_PORT + 11))   # a broker uses BROKER_PORT-2 .. BROKER_PORT+1; shard-broker i adds 4i
NAMESRV_ADDR="127.0.0.1:$NS_PORT"
NS_PID=""
BROKER_PID=""
CUR_PEER=""
CUR_DIR=""
CUR_SHARDS=1
OUR_PIDS=()
cleanup() {
    local pid
    for pid in "${OUR_PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
    if [ "$CUR_PEER" = apache ] && [ -n "$CUR_DIR" ]; then
        "$APACHE_KIT/stop.sh" "$CUR_DIR/broker" "$CUR_DIR/ns" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT INT TERM

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
    local pid port i
    if [ "$CUR_PEER" = apache ]; then
        "$APACHE_KIT/stop.sh" "$CUR_DIR/broker" "$CUR_DIR/ns" >>"$CUR_DIR/stop.log" 2>&1 || true
    else
        for pid in "$BROKER_PID" "$NS_PID"; do
            [ -n "$pid" ] || continue
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        done
    fi
    for port in "$NS_PORT" $((BROKER_PORT - 2)) "$BROKER_PORT" $((BROKER_PORT + 1)); do wait_port_free "$port" || true; done
    for ((i = 1; i < CUR_SHARDS; i++)); do
        for port in $((BROKER_PORT + 4 * i - 2)) $((BROKER_PORT + 4 * i)) $((BROKER_PORT + 4 * i + 1)); do
            wait_port_free "$port" || true
        done
    done
    BROKER_PID=""
    NS_PID=""
    OUR_PIDS=()
    CUR_PEER=""
    CUR_SHARDS=1
}

APACHE_JVM=""
# apache_jvm_settings CMD_FILE: heap, GC and pre-touch from the broker's command line.
apache_jvm_settings() {
    local cmd heap gc pretouch direct java
    cmd=$(cat "$1")
    heap=$(grep -o -- '-Xmx[^ ]*' <<<"$cmd" | tail -1 | sed 's/-Xmx//')
    gc=$(grep -o -- '-XX:+Use[A-Za-z0-9]*GC' <<<"$cmd" | tail -1 | sed 's/-XX:+Use//')
    direct=$(grep -o -- '-XX:MaxDirectMemorySize=[^ ]*' <<<"$cmd" | tail -1 | sed 's/.*=//')
    if grep -q -- '-XX:+AlwaysPreTouch' <<<"$cmd"; then pretouch="pre-touched"; else pretouch="not pre-touched"; fi
    java=$("$(awk '{print $1}' <<<"$cmd")" -version 2>&1 | head -1 | tr -d '"')
    echo "heap ${heap:-?} ($pretouch), GC ${gc:-default}, MaxDirectMemorySize ${direct:-default}; $java"
}

# start_cluster PEER FLUSH SHARDS RUNDIR: fresh store, waits until the topic exists with QUEUES queues in
# all. SHARDS: our shardCount (others: ignored).
start_cluster() {
    local peer=$1 flush=$2 shards=$3 dir=$4 per_broker=$QUEUES i
    rm -rf "$dir"
    mkdir -p "$dir/store"
    CUR_PEER=$peer
    CUR_DIR=$dir
    CUR_SHARDS=1
    case "$peer" in
    ours | ours-forward)
        local routing=direct
        [ "$peer" = ours-forward ] && routing=forward
        if [ "$routing" = direct ]; then
            CUR_SHARDS=$shards
            per_broker=$(((QUEUES + shards - 1) / shards))
        fi
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
            echo "shardCount = $shards"
            echo "shardRouting = \"$routing\""
            [ "$PULL_BATCH" -le 32 ] || echo "maxTransferCountOnMessageInMemory = $PULL_BATCH"
            [ -z "$OUR_EXTRA_CONFIG" ] || printf '%b\n' "$OUR_EXTRA_CONFIG"
        } >"$dir/broker.toml"
        "$OUR_NAMESRV" --listen "$NAMESRV_ADDR" >"$dir/namesrv.log" 2>&1 &
        NS_PID=$!
        OUR_PIDS=("$NS_PID")
        wait_port_open "$NS_PORT" || { log "our name server did not listen"; tail -5 "$dir/namesrv.log" >&2; }
        "$OUR_BROKER" --config "$dir/broker.toml" >"$dir/broker.log" 2>&1 &
        BROKER_PID=$!
        OUR_PIDS+=("$BROKER_PID")
        # Every shard-broker must have registered before the topic is created on each: the broker
        # prints "boot success" once the name server has had the registration of all of them.
        for ((i = 0; i < 300; i++)); do
            grep -q 'boot success' "$dir/broker.log" 2>/dev/null && break
            kill -0 "$BROKER_PID" 2>/dev/null || break
            sleep 0.1
        done
        ;;
    apache)
        cat >"$dir/broker.conf" <<EOF
brokerClusterName = DefaultCluster
brokerName = broker-a
brokerId = 0
brokerRole = ASYNC_MASTER
flushDiskType = $flush
listenPort = $BROKER_PORT
namesrvAddr = $NAMESRV_ADDR
brokerIP1 = 127.0.0.1
storePathRootDir = $dir/store
autoCreateTopicEnable = true
EOF
        [ "$PULL_BATCH" -le 32 ] || echo "maxTransferCountOnMessageInMemory = $PULL_BATCH" >>"$dir/broker.conf"
        NS_PID=$("$APACHE_KIT/namesrv.sh" "$NS_PORT" "$dir/ns" 2>"$dir/namesrv-start.log" | tail -1) \
            || { log "Apache name server did not start"; tail -5 "$dir/namesrv-start.log" >&2; return 1; }
        BROKER_PID=$("$APACHE_KIT/broker.sh" "$dir/broker.conf" "$dir/broker" 2>"$dir/broker-start.log" | tail -1) \
            || { log "Apache broker did not start"; tail -5 "$dir/broker-start.log" >&2; return 1; }
        [ -n "$APACHE_JVM" ] || { APACHE_JVM=$(apache_jvm_settings "$dir/broker/broker.cmd"); log "Apache broker JVM: $APACHE_JVM"; }
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
        OUR_PIDS=("$NS_PID")
        wait_port_open "$NS_PORT" || { log "rocketmq-rust name server did not listen"; tail -5 "$dir/namesrv.log" >&2; }
        ROCKETMQ_HOME="$dir" "$RMQ_BROKER" -c "$dir/broker.toml" >"$dir/broker.log" 2>&1 &
        BROKER_PID=$!
        OUR_PIDS+=("$BROKER_PID")
        ;;
    esac
    echo "$per_broker" >"$dir/queues-per-broker"
    # Ready when the topic can be created (per_broker queues on each broker, which must have registered
    # first); a broker that refuses UPDATE_AND_CREATE_TOPIC gets the topic auto-created by a send instead.
    for i in $(seq 1 60); do
        if ! kill -0 "$BROKER_PID" 2>/dev/null; then
            log "$peer broker exited; logs in $dir"; tail -20 "$dir/broker.log" "$dir/broker/broker.out" 2>/dev/null >&2; return 1
        fi
        if "$LOADGEN" produce --namesrv "$NAMESRV_ADDR" --topic BenchTopic --create-queues "$per_broker" \
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

# s4_cached_share PEER SHARDS DIR REPEAT: notes how much of the S4 backlog was in memory when the consume
# began. Apache: the CommitLog's pages in the page cache (fincore). Ours: the log's in-memory window
# (readCacheBytes, 64 MiB per shard unless OUR_EXTRA_CONFIG sets it); everything older is read from
# disk through the block cache, which starts empty.
s4_cached_share() {
    local peer=$1 shards=$2 dir=$3 rep=$4 backlog=$((BACKLOG_MB * 1024 * 1024)) cached how
    case "$peer" in
    apache)
        command -v fincore >/dev/null || { note "apache S4 repeat $rep: fincore missing, cached share not measured"; return 0; }
        cached=$(fincore --bytes --noheadings --output RES "$dir"/store/commitlog/* 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
        how="CommitLog pages in the page cache (fincore)" ;;
    ours | ours-forward)
        local window
        window=$(printf '%b\n' "$OUR_EXTRA_CONFIG" | sed -n 's/^ *readCacheBytes *= *\([0-9]*\).*/\1/p' | tail -1)
        cached=$(( ${window:-67108864} * shards ))
        how="readCacheBytes window x $shards shards; the rest read from disk" ;;
    *) return 0 ;;
    esac
    [ "$cached" -gt "$backlog" ] && cached=$backlog
    note "$peer S4 repeat $rep: $((cached / 1048576)) of $BACKLOG_MB MiB backlog in memory when the consume began ($((cached * 100 / backlog))%; $how)"
}

# run_scenario PEER SCENARIO REPEAT: one run with a fresh store; records the JSON and the broker's and
# name server's CPU per message over the loadgen run (after the preload for S4).
run_scenario() {
    local peer=$1 sc=$2 rep=$3 flush=ASYNC_FLUSH shards=$OUR_SHARDS variant="" t0 cpu
    case "$sc" in S2 | S5) flush=SYNC_FLUSH ;; esac
    local runs=("$sc")
    if [ "$sc" = S6 ]; then
        [[ "$peer" == ours* ]] || return 0
        runs=()
        for s in $S6_SHARDS; do runs+=("S6-shards$s"); done
    fi
    for variant in "${runs[@]}"; do
        [[ "$variant" == S6-shards* ]] && shards=${variant#S6-shards}
        local dir="$OUT/run/$peer-$variant-$rep" json="$OUT/$peer-$variant-$rep.json"
        log "$peer $variant repeat $rep ($flush)"
        start_cluster "$peer" "$flush" "$shards" "$dir" || { note "$peer $variant repeat $rep: broker did not start"; stop_cluster; continue; }
        local ok=1
        t0=$(cpu_ticks "$BROKER_PID" "$NS_PID")
        case "$sc" in
        S1 | S2 | S6)
            "$LOADGEN" produce "${LG_COMMON[@]}" "${PRODUCE[@]}" "${TIMED[@]}" --mode sync --inflight 64 --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0 ;;
        S3)
            "$LOADGEN" produce "${LG_COMMON[@]}" "${PRODUCE[@]}" "${TIMED[@]}" --mode sync --inflight 16 --batch 32 --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0 ;;
        S4)
            local count=$((BACKLOG_MB * 1024 * 1024 / SIZE))
            "$LOADGEN" produce "${LG_COMMON[@]}" "${PRODUCE[@]}" --count "$count" --mode sync --inflight 16 --batch 32 \
                --json "$dir/preload.json" >"$dir/preload.log" 2>&1 || ok=0
            [ "$ok" = 1 ] && s4_cached_share "$peer" "$shards" "$dir" "$rep"
            t0=$(cpu_ticks "$BROKER_PID" "$NS_PID")
            [ "$ok" = 1 ] && { "$LOADGEN" consume "${LG_COMMON[@]}" --count "$count" --from earliest --pull-batch "$PULL_BATCH" \
                --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0; } ;;
        S5)
            "$LOADGEN" e2e "${LG_COMMON[@]}" "${PRODUCE[@]}" "${TIMED[@]}" --rate "$S5_RATE" --mode async --inflight 512 \
                --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0 ;;
        esac
        cpu=-
        if [ "$ok" = 1 ] && [ -s "$json" ]; then
            cpu=$(cpu_us_per_msg $(($(cpu_ticks "$BROKER_PID" "$NS_PID") - t0)) "$json")
        fi
        stop_cluster
        if [ "$ok" = 1 ] && [ -s "$json" ]; then
            printf '%s\t%s\t%s\t%s\t%s\n' "$peer" "$variant" "$rep" "$json" "$cpu" >>"$RESULTS"
            rm -rf "$dir/store"
        else
            note "$peer $variant repeat $rep failed: $(tail -2 "$dir/loadgen.log" "$dir/preload.log" 2>/dev/null | tr '\n' ' ')"
            rm -rf "$dir/store"
        fi
    done
}

for peer in "${PEER_LIST[@]}"; do
    for sc in $SCENARIOS; do
        for rep in $(seq 1 "$REPEATS"); do
            run_scenario "$peer" "$sc" "$rep"
        done
    done
done

# ---------------------------------------------------------------- table and charts
MACHINE="${NPROC} cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB RAM"
python3 - "$OUT/meta.json" <<EOF
import json, sys
json.dump({
    "peers": "${PEER_LIST[*]}".split(),
    "machine": """$MACHINE""",
    "stamp": "$STAMP",
    "disk": "O_DIRECT sequential write ${DISK_WRITE_MBS} MB/s; 4 KiB append+fdatasync avg ${FSYNC_AVG} ms, p50 ${FSYNC_P50} ms, p99 ${FSYNC_P99} ms",
    "settings": "DURATION=${DURATION} WARMUP=${WARMUP} REPEATS=${REPEATS} (median), 1 KiB bodies, QUEUES=${QUEUES} in all (ours: shardCount ${OUR_SHARDS}; direct: $(((QUEUES + OUR_SHARDS - 1) / OUR_SHARDS)) per shard-broker), LOADGEN_THREADS=${LOADGEN_THREADS}, CONNECTIONS=${CONNECTIONS}",
    "apache_jvm": """$APACHE_JVM""",
    "backlog_mb": "$BACKLOG_MB",
    "s5_rate": "$S5_RATE",
    "pull_batch": "$PULL_BATCH",
}, open(sys.argv[1], "w"), indent=1)
EOF
python3 "$ROOT/bench/compare_report.py" "$OUT"
log "results in $OUT (table.md, *.svg charts, per-run JSON, logs under run/)"
