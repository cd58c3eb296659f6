#!/usr/bin/env bash
# Sends through a gRPC proxy against the same sends straight to the broker, on one machine, for ours
# and for Apache RocketMQ 5.5.0:
#   1. a name server and broker of this checkout: `loadgen produce` direct, then our `proxy` in front
#      and its gRPC load generator (proxy/examples/grpc_load) with the same body size and requests in
#      flight; then POP receive + ack through the proxy in batches of 32 (BATCH_ACK_MESSAGE);
#   2. (APACHE=1) ours stopped, Apache RocketMQ 5.5.0's name server, broker and proxy (cluster mode)
#      from Maven Central (tests/apache/), driven by the same two load generators the same way: loadgen
#      direct to Apache's broker, grpc_load through Apache's proxy (it speaks the same
#      apache.rocketmq.v2.MessagingService; plaintext and TLS on one port, tls.server.mode permissive
#      by default), POP receive + ack through it.
# Ends with one table of all of them. Each measured run is preceded by a warm-up of the same load whose
# figures are dropped: WARMUP seconds of sends (through a proxy: to a second topic), and a POP receive
# + ack of up to 100,000 of those messages. Apache's proxy needed 30-40 s of load to come near its
# rate on the 2-core machine (JIT); ours needs none. grpc_load behaves as an SDK does: a Telemetry
# stream with the producer's or the SimpleConsumer's settings first, the SDK headers on each call.
#
#   cargo build --release -p broker -p namesrv -p loadgen -p proxy && \
#     cargo build --release -p proxy --example grpc_load
#   bench/proxy.sh [seconds (10)] [inflight (64)] [size (128)]
# RECEIVERS (4): concurrent receive+ack callers per shard-broker of ours in the POP part (Apache's one
# broker gets as many in all: RECEIVERS x the shard count).
# WARMUP (30): seconds of warm-up sends before each measured send (0: none, and no POP warm-up).
# BIN_DIR: where the binaries are (an A/B runs the script once per build). PROXY_CONFIG: lines added to
# our proxy's config (e.g. 'grpcThreadPoolNums = 1'). APACHE (1): 0 skips the Apache part; when
# tests/apache/setup.sh cannot get rocketmq-5.5.0 from Maven Central the part is skipped with a
# MISSING line. Apache's broker and proxy keep their defaults (the broker's config: the same keys as
# ours here; the proxy's: cluster name, name server, ports). Apache's JVMs: its broker G1 with a 2 GiB
# heap pre-touched, its proxy and name server G1 with 1 GiB / 512 MiB (tests/apache/start.sh;
# RMQ_BROKER_HEAP, RMQ_SERVER_HEAP, JAVA_OPT_EXT change them). Topics: 8 queues per broker (ours: per
# shard-broker, 2 on 2 cores; Apache: one broker), created with loadgen. Ports: a free block, random.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN_DIR:-${CARGO_TARGET_DIR:-$repo/target}/release}
secs=${1:-10}; inflight=${2:-64}; size=${3:-128}; receivers=${RECEIVERS:-4}; warm=${WARMUP:-30}
apache=${APACHE:-1}
for b in namesrv broker loadgen proxy examples/grpc_load; do
  [ -x "$bin/$b" ] || { echo "$bin/$b missing (see the build line at the top)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/proxy-bench-XXXX)
pids=()
apache_dirs=()
stop_ours() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; pids=(); }
cleanup() {
  stop_ours
  [ "${#apache_dirs[@]}" -eq 0 ] || "$repo/tests/apache/stop.sh" "${apache_dirs[@]}" >/dev/null 2>&1 || true
  rm -rf "$work/store" "$work/apache/store"   # the logs stay
}
trap cleanup EXIT
# Ports: one block of free consecutive ports (the machine may be running tests that take fixed-looking
# ones): ours namesrv B, our proxy B+1, Apache's namesrv B+2, its proxy B+3 (gRPC) and B+4 (remoting),
# its broker B+7 (and B+5, B+6, B+8), ours broker B+11 (shard-broker i on B+11+4i, each with -2 and +1).
shards=$(nproc)   # our broker runs one shard-broker per CPU (shardCount's default): broker-bench-0 ..
base=$(python3 - $((12 + 4 * shards)) <<'PY'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(500):
    b = random.randrange(20000, 60000 - n)
    socks = []
    try:
        for p in range(b, b + n):
            s = socket.socket()
            s.bind(("0.0.0.0", p))
            socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(b)
    break
PY
)
[ -n "$base" ] || { echo "no block of free ports found" >&2; exit 1; }
ns_port=$base; proxy_port=$((base + 1)); broker_port=$((base + 11))
a_ns_port=$((base + 2)); a_proxy_port=$((base + 3)); a_remoting_port=$((base + 4)); a_broker_port=$((base + 7))
sent=0   # messages the last proxy_send had acknowledged
check_failed=0
summary="$work/summary.tsv"   # path, msg/s, p50 ms, p99 ms, CPU us/msg: broker, proxy, load generator
: > "$summary"

# CPU seconds (utime + stime) of a process so far.
cpu() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"; }
# us_per N SECONDS: microseconds per message, "-" without messages or a reading.
us_per() { awk -v n="$1" -v s="$2" 'BEGIN { if (n > 0 && s != "") printf "%.1f", s * 1e6 / n; else print "-" }'; }
# record LABEL MSGS_PER_S P50_MS P99_MS MSGS BROKER_CPU_S PROXY_CPU_S LOADGEN_CPU_S: prints the CPU line
# and adds a row to the summary. The CPU figures are seconds over the measured run.
record() {
  local b p l
  b=$(us_per "$5" "$6"); p=$(us_per "$5" "$7"); l=$(us_per "$5" "$8")
  if [ "${5:-0}" -gt 0 ] 2>/dev/null; then
    echo "   CPU us/msg: broker $b, proxy $p, load generator $l"
  else
    echo "   CPU us/msg: no messages"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$b" "$p" "$l" >> "$summary"
}
jget() { python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d.get(k) if isinstance(d, dict) else None
print("" if d is None else d)' "$1" "$2"; }
# The one JSON line a grpc_load run prints.
gl_json() { grep -m1 '^{' "$1" > "$1.json" || echo '{}' > "$1.json"; echo "$1.json"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
ms() { awk -v u="$1" 'BEGIN { printf "%.3f", u / 1000 }'; }

# direct_send LABEL NAMESRV TOPIC BROKER_PID PROXY_PID: loadgen produce straight to the broker: WARMUP
# seconds in one run, then the measured run (with 1 s of loadgen's own warm-up for its ramp).
direct_send() {
  local label=$1 ns=$2 topic=$3 bpid=$4 ppid=$5 out b0 p0
  out="$work/$topic.direct"
  echo "== $label: loadgen produce, $inflight in flight, $size-byte bodies, ${secs}s after ${warm}s of warm-up"
  local lg=("$bin/loadgen" produce --namesrv "$ns" --topic "$topic" --threads 1 --inflight "$inflight" --size "$size")
  [ "$warm" -le 0 ] || "${lg[@]}" --duration "${warm}s" --warmup 0s > "$out.warm" 2>&1 || true
  b0=$(cpu "$bpid"); p0=$(cpu "$ppid")
  if ! "${lg[@]}" --duration "${secs}s" --warmup 1s --json "$out.json" > "$out" 2>&1; then
    echo "   FAILED: $(tail -2 "$out" | tr '\n' ' ')"; record "$label" - - - 0 "" "" ""; return 0
  fi
  grep -E "^Send TPS" "$out"
  record "$label" "$(jget "$out.json" produce.tps)" "$(jget "$out.json" produce.rt_ms.p50)" \
    "$(jget "$out.json" produce.rt_ms.p99)" "$(jget "$out.json" produce.ok_incl_warmup)" \
    "$(sub "$b0" "$(cpu "$bpid")")" "$(sub "$p0" "$(cpu "$ppid")")" ""
}

# proxy_send LABEL ENDPOINT TOPIC BROKER_PID PROXY_PID: grpc_load send through a proxy as a producer
# (Telemetry settings first): WARMUP seconds to TOPIC-warm, then the measured run to TOPIC (both topics
# must exist). Sets `sent`.
proxy_send() {
  local label=$1 ep=$2 topic=$3 bpid=$4 ppid=$5 out b0 p0 j n
  out="$work/$topic.send"
  sent=0
  echo "== $label: grpc_load send, $inflight callers, $size-byte bodies, ${secs}s after ${warm}s of warm-up"
  local gl=("$bin/examples/grpc_load" send --telemetry --endpoint "$ep" --concurrency "$inflight" --size "$size")
  [ "$warm" -le 0 ] || "${gl[@]}" --topic "$topic-warm" --seconds "$warm" > "$out.warm" 2>&1 || true
  b0=$(cpu "$bpid"); p0=$(cpu "$ppid")
  "${gl[@]}" --topic "$topic" --seconds "$secs" > "$out" 2>&1 || true
  cat "$out"
  j=$(gl_json "$out"); n=$(jget "$j" ok)
  if [ -z "$n" ] || [ "$n" = 0 ]; then
    echo "   FAILED: no send acknowledged"; record "$label" - - - 0 "" "" ""; return 0
  fi
  [ "$(jget "$j" errors)" = 0 ] || echo "   NOTE: $(jget "$j" errors) sends failed"
  sent=$n
  record "$label" "$(jget "$j" tps)" "$(ms "$(jget "$j" p50_us)")" "$(ms "$(jget "$j" p99_us)")" "$n" \
    "$(sub "$b0" "$(cpu "$bpid")")" "$(sub "$p0" "$(cpu "$ppid")")" "$(jget "$j" cpu_s)"
}

# proxy_pop LABEL ENDPOINT TOPIC BROKERS BROKER_PID PROXY_PID: POP receive + ack, as a SimpleConsumer,
# of what proxy_send left: first up to 100,000 of the warm-up's messages (TOPIC-warm, a warm-up of the
# receive path), then the measured run's (TOPIC).
proxy_pop() {
  local label=$1 ep=$2 topic=$3 brokers=$4 bpid=$5 ppid=$6 out b0 p0 j n
  out="$work/$topic.pop"
  echo "== $label: POP receive + ack, batches of 32, $receivers receivers per broker ($brokers)"
  local gl=("$bin/examples/grpc_load" receive-ack --endpoint "$ep" --group GID_bench --broker "$brokers"
    --receivers "$receivers" --invisible-ms 10000)
  [ "$warm" -le 0 ] || "${gl[@]}" --topic "$topic-warm" --count 100000 --no-check > "$out.warm" 2>&1 || true
  b0=$(cpu "$bpid"); p0=$(cpu "$ppid")
  # --count: what the send left (and the message that created the topic), so the receivers stop at
  # the last one instead of waiting for an empty long poll (Apache's proxy makes each one 5 s).
  "${gl[@]}" --topic "$topic" --count $((sent > 0 ? sent + 1 : 0)) --no-check > "$out" 2>&1 || true
  local b1 p1
  b1=$(cpu "$bpid"); p1=$(cpu "$ppid")
  cat "$out"
  j=$(gl_json "$out"); n=$(jget "$j" acked)
  if [ -z "$n" ] || [ "$n" = 0 ] || grep -q '^FAIL' "$out"; then
    echo "   FAILED"; record "$label" - - - 0 "" "" ""; return 0
  fi
  # msgs/s: over the time to the last ack (grpc_load's "seconds"); the CPU readings also cover the
  # receivers' last long polls (seconds_total).
  record "$label" "$(jget "$j" msgs_per_s)" - - "$n" "$(sub "$b0" "$b1")" "$(sub "$p0" "$p1")" "$(jget "$j" cpu_s)"
  # Acked messages must not come back once their invisible time (10 s) is over: a receive then finds
  # nothing (a message it finds, it acks and counts).
  sleep 12
  "${gl[@]}" --topic "$topic" --count 0 --no-check > "$out.check" 2>&1 || true
  n=$(jget "$(gl_json "$out.check")" acked)
  if [ "$n" = 0 ]; then
    echo "   check: nothing came back after the invisible time"
  else
    echo "   CHECK FAILED: ${n:-?} acked messages came back ($(tail -1 "$out.check"))"
    check_failed=1
  fi
}

# make_topics NAMESRV TOPIC...: each with 8 queues per broker (loadgen's UPDATE_AND_CREATE_TOPIC).
make_topics() {
  local ns=$1 t
  shift
  for t in "$@"; do
    "$bin/loadgen" produce --namesrv "$ns" --topic "$t" --create-queues 8 --threads 1 --inflight 1 \
      --size "$size" --count 1 > /dev/null
  done
}

# ---------------------------------------------------------------- ours
cat > "$work/broker.toml" <<EOT
brokerClusterName = "DefaultCluster"
brokerName = "broker-bench"
brokerId = 0
brokerIP1 = "127.0.0.1"
bindAddress = "127.0.0.1"
namesrvAddr = "127.0.0.1:$ns_port"
listenPort = $broker_port
storePathRootDir = "$work/store"
mappedFileSizeCommitLog = 268435456
EOT
printf 'grpcServerPort = %s\nbindAddress = "127.0.0.1"\nnamesrvAddr = "127.0.0.1:%s"\nmetricsPromExporterPort = 0\n%s\n' \
  "$proxy_port" "$ns_port" "${PROXY_CONFIG:-}" > "$work/proxy.toml"
"$bin/namesrv" --listen 127.0.0.1:$ns_port > "$work/namesrv.log" 2>&1 & pids+=($!)
sleep 1
"$bin/broker" --config "$work/broker.toml" > "$work/broker.log" 2>&1 & pids+=($!); broker_pid=$!
sleep 4
RUST_LOG=warn "$bin/proxy" --config "$work/proxy.toml" > "$work/proxy.log" 2>&1 & pids+=($!); proxy_pid=$!
sleep 1

make_topics 127.0.0.1:$ns_port BenchDirect BenchProxy BenchProxy-warm
direct_send "ours, direct" 127.0.0.1:$ns_port BenchDirect "$broker_pid" "$proxy_pid"
proxy_send "ours, through our proxy" 127.0.0.1:$proxy_port BenchProxy "$broker_pid" "$proxy_pid"
our_brokers=$(seq -s, -f 'broker-bench-%g' 0 $((shards - 1)))
echo "   (POP: what the send left on the $shards shard-brokers, received from all at once)"
proxy_pop "ours, POP through our proxy" 127.0.0.1:$proxy_port BenchProxy "$our_brokers" "$broker_pid" "$proxy_pid"
stop_ours

# ---------------------------------------------------------------- Apache RocketMQ 5.5.0
apache_failed=0
if [ "$apache" != 1 ]; then
  echo "== Apache RocketMQ 5.5.0: skipped (APACHE=$apache)"
elif ! "$repo/tests/apache/setup.sh" rocketmq-5.5.0 > "$work/apache-setup.log" 2>&1; then
  echo "== Apache RocketMQ 5.5.0: SKIPPED, $(grep -m1 MISSING "$work/apache-setup.log" || echo "tests/apache/setup.sh rocketmq-5.5.0 failed: $(tail -1 "$work/apache-setup.log")")"
else
  a="$work/apache"
  mkdir -p "$a/ns" "$a/broker" "$a/proxy"
  apache_dirs=("$a/broker" "$a/proxy" "$a/ns")
  echo "listenPort=$a_ns_port" > "$a/namesrv.properties"
  cat > "$a/broker.conf" <<EOT
brokerClusterName = DefaultCluster
brokerName = broker-bench
brokerId = 0
brokerIP1 = 127.0.0.1
namesrvAddr = 127.0.0.1:$a_ns_port
listenPort = $a_broker_port
storePathRootDir = $a/store
mappedFileSizeCommitLog = 268435456
EOT
  printf '{"rocketMQClusterName": "DefaultCluster", "namesrvAddr": "127.0.0.1:%s", "grpcServerPort": %s, "remotingListenPort": %s}\n' \
    "$a_ns_port" "$a_proxy_port" "$a_remoting_port" > "$a/rmq-proxy.json"
  echo "== Apache RocketMQ 5.5.0: starting its name server, broker and proxy (cluster mode)"
  apache_start() { "$repo/tests/apache/start.sh" rocketmq-5.5.0 "$1" "$2" "$3" 2> "$3/start.err" | tail -1; }
  if a_ns=$(apache_start namesrv "$a/namesrv.properties" "$a/ns") && [ -n "$a_ns" ] \
      && a_broker=$(apache_start broker "$a/broker.conf" "$a/broker") && [ -n "$a_broker" ] \
      && a_proxy=$(apache_start proxy "$a/rmq-proxy.json" "$a/proxy") && [ -n "$a_proxy" ]; then
    echo "   broker JVM: $(grep -o -- '-Xmx[^ ]*\|-XX:+Use[A-Za-z0-9]*GC\|-XX:+AlwaysPreTouch' "$a/broker/broker.cmd" | tr '\n' ' ')$("$(awk '{print $1}' "$a/broker/broker.cmd")" -version 2>&1 | head -1)"
    make_topics 127.0.0.1:$a_ns_port BenchDirect BenchProxy BenchProxy-warm
    direct_send "Apache 5.5.0, direct" 127.0.0.1:$a_ns_port BenchDirect "$a_broker" "$a_proxy"
    proxy_send "Apache 5.5.0, through Apache's proxy" 127.0.0.1:$a_proxy_port BenchProxy "$a_broker" "$a_proxy"
    # As many receivers in all as ours had: RECEIVERS per shard-broker there, all on the one broker here.
    proxy_pop "Apache 5.5.0, POP through Apache's proxy" 127.0.0.1:$a_proxy_port BenchProxy \
      "$(for _ in $(seq 1 "$shards"); do printf 'broker-bench,'; done | sed 's/,$//')" "$a_broker" "$a_proxy"
  else
    apache_failed=1
    echo "== Apache RocketMQ 5.5.0: FAILED to start:"
    cat "$a"/*/start.err >&2
  fi
  "$repo/tests/apache/stop.sh" "${apache_dirs[@]}" > /dev/null 2>&1 || true
  apache_dirs=()
fi

# ---------------------------------------------------------------- side by side
echo
echo "== side by side: $size-byte bodies, $inflight in flight, ${secs}s measured after ${warm}s of warm-up"
echo "   (loadgen for direct sends, grpc_load through a proxy; CPU: us per message over the measured run;"
echo "   POP msg/s: the sends' messages received and acked, over the time to the last ack)"
echo
echo "| path | msg/s | p50 ms | p99 ms | CPU broker | CPU proxy | CPU load generator |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
while IFS=$'\t' read -r label tps p50 p99 b p l; do
  tps=$(awk -v t="$tps" 'BEGIN { if (t == "-" || t == "") print "-"; else printf "%.0f", t }')
  echo "| $label | $tps | $p50 | $p99 | $b | $p | $l |"
done < "$summary"
echo
echo "work dir: $work"
[ "$check_failed" = 0 ] || echo "FAILED: acked messages came back (see CHECK FAILED above)"
exit $((apache_failed | check_failed))
