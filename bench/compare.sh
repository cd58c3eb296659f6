#!/usr/bin/env bash
# Side-by-side benchmark on loopback, one machine: Apache RocketMQ's own name server and broker, 5.5.0
# and 4.9.7 (the reference peers, Apache's artifacts from Maven Central through tests/apache/; Maven
# has no 4.9.8 servers), our broker with shards as brokers (shardRouting = "direct", the default), our
# broker with one broker per process (shardRouting = "forward"), and optionally rocketmq-rust 1.0.0.
# Measures the disk's raw limits first, then runs scenarios S1..S6 (docs/performance.md) against each
# peer with a fresh store per repeat, and prints one table of medians with ratios against the first
# peer; writes SVG charts next to it.
#
# Quick run (about 9 minutes):
#   DURATION=5s WARMUP=2s REPEATS=1 BACKLOG_MB=128 bench/compare.sh
# Full run (about 55 minutes; what the docs quote):
#   bench/compare.sh
#
# Environment (defaults in brackets):
#   DURATION [20s] measured time per scenario run     REPEATS [3] (median reported)
#   WARMUP [10s] (5s until 2026-12-06; Apache 5.5.0's send rate still climbs for about 10 s)
#   SCENARIOS ["S1 S2 S3 S4 S5 S6"]                   PEERS ["apache5 apache4 ours ours-forward"]
#     peers: apache5 (Apache RocketMQ 5.5.0's NamesrvStartup and BrokerStartup), apache4 (4.9.7's;
#     `apache` is accepted for it), ours (shardRouting = "direct"), ours-forward (shardRouting =
#     "forward"), rocketmq-rust (optional; answers ~1,500 msg/s with ~40 ms stalls against our loadgen).
#     Each Apache peer runs `tests/apache/setup.sh <set>` first (a JDK and Maven from apt when missing,
#     the set's jars from Maven Central into tests/apache's cache); when that fails the peer is
#     dropped with a MISSING note in the output and the table's notes. Both get the same broker config
#     (ASYNC_MASTER, the scenario's flushDiskType, autoCreateTopicEnable, everything else Apache's
#     defaults of that version: 5.5.0 runs its timer wheel, POP revive and compaction services and
#     also writes consume-queue entries to a RocksDB store; the table's notes say so)
#   BACKLOG_MB [1024] S4 backlog size                 S5_RATE [20000] msg/s
#   OMB_WORKLOAD [bench/omb/1-topic-16-partitions-1kb.yaml] the OpenMessaging Benchmark workload file
#     scenario OMB runs (`loadgen omb`, its testDurationMinutes and warm-up replaced by DURATION and
#     WARMUP; not in the default SCENARIOS: add it, e.g. SCENARIOS="OMB")
#   PULL_BATCH [32] S4's maxMsgNums per pull (Java's pullBatchSize); above 32 every broker gets it as
#     maxTransferCountOnMessageInMemory, since each caps a pull at 32 messages by default
#   QUEUES [8] queues of the benchmark topic in all (direct mode: QUEUES / OUR_SHARDS per shard-broker)
#   OUR_SHARDS [nproc] shardCount of our broker (S1..S5)
#   LOADGEN_THREADS [1]   CONNECTIONS [1]
#   S6_SHARDS ["1 <nproc>"] shard counts for S6 (ours and ours-forward only)
#   DISK_MB [1024] size of the raw O_DIRECT write test
#   SKIP_BUILD [0]   INSTALL_PEER [0] (1: cargo install rocketmq-rust when missing)
#   Apache brokers' JVM: tests/apache/start.sh's (Apache's runbroker.sh settings: G1, a 2 GiB heap
#     pre-touched, 4 GiB direct memory) unless RMQ_BROKER_HEAP, RMQ_BROKER_DIRECT, RMQ_PRETOUCH or
#     JAVA_OPT_EXT say otherwise, plus a GC log (run/<peer>-*/broker/broker_gc.log, as runbroker.sh
#     writes one); the table's header prints the settings each used. APACHE_ROCKETMQ_CACHE moves the
#     jars' cache (tests/apache/lib.sh)
#   RMQ_ROOT [bench/cache/rocketmq-rust]   OUT [bench/cache/results-<utc stamp>]
#   CARGO_TARGET_DIR [target]   BASE_PORT [random in 20000..59999]
#   OUR_EXTRA_CONFIG [""] lines appended to our broker's config (both ours peers)
# Output in OUT: table.md (also printed), results.tsv, per-run JSON (loadgen --json), charts
# (ratio-tps.svg, ratio-p99.svg, ratio-cpu.svg, latency-<scenario>.svg), logs under run/ (an Apache
# peer's server logs under run/<peer>-*/{ns,broker}/home/logs/rocketmqlogs/).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-20s}
WARMUP=${WARMUP:-10s}
REPEATS=${REPEATS:-3}
SCENARIOS=${SCENARIOS:-"S1 S2 S3 S4 S5 S6"}
PEERS=${PEERS:-"apache5 apache4 ours ours-forward"}
BACKLOG_MB=${BACKLOG_MB:-1024}
S5_RATE=${S5_RATE:-20000}
OMB_WORKLOAD=${OMB_WORKLOAD:-$ROOT/bench/omb/1-topic-16-partitions-1kb.yaml}
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
APACHE_DIR=$ROOT/tests/apache
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

# apache_set PEER: the tests/apache set of an Apache peer (empty for the others).
apache_set() {
    case "$1" in
    apache4) echo rocketmq-4.9.7 ;;
    apache5) echo rocketmq-5.5.0 ;;
    esac
}
# `apache` (the old name of the 4.x peer) is apache4; each Apache peer's set is installed (or found
# installed) now, and a peer whose set Maven cannot serve is dropped, loudly.
peers=()
for peer in $PEERS; do
    [ "$peer" = apache ] && peer=apache4
    [[ " ${peers[*]:-} " == *" $peer "* ]] && continue
    set_name=$(apache_set "$peer")
    if [ -n "$set_name" ]; then
        log "$peer: tests/apache/setup.sh $set_name (log in $OUT/setup-$set_name.log)"
        if ! "$APACHE_DIR/setup.sh" "$set_name" >"$OUT/setup-$set_name.log" 2>&1; then
            why=$(grep -m1 'MISSING' "$OUT/setup-$set_name.log" || tail -1 "$OUT/setup-$set_name.log")
            note "Apache RocketMQ set $set_name MISSING (tests/apache/setup.sh $set_name failed: $why): $peer column skipped"
            continue
        fi
    fi
    peers+=("$peer")
done
PEERS="${peers[*]:-}"
if [[ " $PEERS " == *" apache5 "* ]]; then
    note "apache5 (Apache RocketMQ 5.5.0) keeps Apache's 5.x defaults beyond the broker config both Apache peers get: the timer wheel (timerWheelEnable=true), the POP revive and compaction services, and storeType=default with combineCQLoadingCQTypes=default;defaultRocksDB, so besides the file consume queues it writes each message's consume-queue entry to a RocksDB store (store/rocksdbstore); the store settings both versions have keep the same defaults. Its JIT takes longer than 4.9.7's to reach speed (about 10 s of S1): keep WARMUP at 10 s or more"
fi
if [[ " $PEERS " == *" apache4 "* ]]; then
    note "apache4 is Apache RocketMQ 4.9.7, the newest 4.x whose name server and broker Maven Central serves (the records up to 2026-12-02 were measured against 4.9.8 from a kit that is gone)"
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
    if [[ "$CUR_PEER" == apache* ]] && [ -n "$CUR_DIR" ]; then
        "$APACHE_DIR/stop.sh" "$CUR_DIR/broker" "$CUR_DIR/ns" >/dev/null 2>&1 || true
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
    if [[ "$CUR_PEER" == apache* ]]; then
        "$APACHE_DIR/stop.sh" "$CUR_DIR/broker" "$CUR_DIR/ns" >>"$CUR_DIR/stop.log" 2>&1 || true
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

declare -A APACHE_JVM=()   # peer -> the JVM settings its broker ran with
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
    apache4 | apache5)
        local set_name
        set_name=$(apache_set "$peer")
        echo "listenPort=$NS_PORT" >"$dir/namesrv.properties"
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
        mkdir -p "$dir/ns" "$dir/broker"
        NS_PID=$("$APACHE_DIR/start.sh" "$set_name" namesrv "$dir/namesrv.properties" "$dir/ns" 2>"$dir/namesrv-start.log" | tail -1)
        [[ "$NS_PID" =~ ^[0-9]+$ ]] || { log "Apache name server ($set_name) did not start"; tail -5 "$dir/namesrv-start.log" >&2; return 1; }
        # Apache's runbroker.sh writes a GC log; so does this broker (JAVA_OPT_EXT for it alone).
        BROKER_PID=$(JAVA_OPT_EXT="${JAVA_OPT_EXT:-} -Xlog:gc:file=$dir/broker/broker_gc.log:time,tags" \
            "$APACHE_DIR/start.sh" "$set_name" broker "$dir/broker.conf" "$dir/broker" 2>"$dir/broker-start.log" | tail -1)
        [[ "$BROKER_PID" =~ ^[0-9]+$ ]] || { log "Apache broker ($set_name) did not start"; tail -5 "$dir/broker-start.log" >&2; return 1; }
        if [ -z "${APACHE_JVM[$peer]:-}" ]; then
            APACHE_JVM[$peer]=$(apache_jvm_settings "$dir/broker/broker.cmd")
            log "$peer ($set_name) broker JVM: ${APACHE_JVM[$peer]}"
        fi
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
    apache4 | apache5)
        command -v fincore >/dev/null || { note "$peer S4 repeat $rep: fincore missing, cached share not measured"; return 0; }
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
        OMB)
            "$LOADGEN" omb --workload "$OMB_WORKLOAD" --namesrv "$NAMESRV_ADDR" --threads "$LOADGEN_THREADS" \
                --warmup "$WARMUP" --test-duration "$DURATION" --json "$json" >"$dir/loadgen.log" 2>&1 || ok=0 ;;
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
APACHE_JVM_JSON=$(for peer in "${!APACHE_JVM[@]}"; do printf '%s\t%s\n' "$peer" "${APACHE_JVM[$peer]}"; done \
    | python3 -c 'import json, sys; print(json.dumps(dict(l.rstrip("\n").split("\t", 1) for l in sys.stdin if l.strip())))')
python3 - "$OUT/meta.json" "$APACHE_JVM_JSON" <<EOF
import json, sys
json.dump({
    "peers": "${PEER_LIST[*]}".split(),
    "machine": """$MACHINE""",
    "stamp": "$STAMP",
    "disk": "O_DIRECT sequential write ${DISK_WRITE_MBS} MB/s; 4 KiB append+fdatasync avg ${FSYNC_AVG} ms, p50 ${FSYNC_P50} ms, p99 ${FSYNC_P99} ms",
    "settings": "DURATION=${DURATION} WARMUP=${WARMUP} REPEATS=${REPEATS} (median), 1 KiB bodies, QUEUES=${QUEUES} in all (ours: shardCount ${OUR_SHARDS}; direct: $(((QUEUES + OUR_SHARDS - 1) / OUR_SHARDS)) per shard-broker), LOADGEN_THREADS=${LOADGEN_THREADS}, CONNECTIONS=${CONNECTIONS}",
    "apache_jvm": json.loads(sys.argv[2]),
    "peer_labels": {"apache5": "Apache RocketMQ 5.5.0", "apache4": "Apache RocketMQ 4.9.7",
                    "ours": "ours, shardRouting direct", "ours-forward": "ours, shardRouting forward",
                    "rocketmq-rust": "rocketmq-rust 1.0.0"},
    "backlog_mb": "$BACKLOG_MB",
    "s5_rate": "$S5_RATE",
    "omb_workload": "$(basename "$OMB_WORKLOAD" .yaml)",
    "pull_batch": "$PULL_BATCH",
}, open(sys.argv[1], "w"), indent=1)
EOF
python3 "$ROOT/bench/compare_report.py" "$OUT"
log "results in $OUT (table.md, *.svg charts, per-run JSON, logs under run/)"
