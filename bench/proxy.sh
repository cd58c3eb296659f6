#!/usr/bin/env bash
# Sends through the gRPC proxy against the same sends straight to the broker, on one machine:
# a name server and broker of this checkout, `loadgen produce` direct, then `proxy` in front and its
# gRPC load generator (proxy/examples/grpc_load) with the same body size and requests in flight.
# Also POP receive + ack through the proxy in batches of 32 (BATCH_ACK_MESSAGE).
#
#   cargo build --release -p broker -p namesrv -p loadgen -p proxy && \
#     cargo build --release -p proxy --example grpc_load
#   bench/proxy.sh [seconds (10)] [inflight (64)] [size (128)]
# RECEIVERS (4): concurrent receive+ack callers per shard-broker in the POP part. BIN_DIR: where
# the binaries are (an A/B runs the script once per build). PROXY_CONFIG: lines added to the proxy's
# config (e.g. 'grpcThreadPoolNums = 1').
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN_DIR:-${CARGO_TARGET_DIR:-$repo/target}/release}
secs=${1:-10}; inflight=${2:-64}; size=${3:-128}; receivers=${RECEIVERS:-4}
for b in namesrv broker loadgen proxy examples/grpc_load; do
  [ -x "$bin/$b" ] || { echo "$bin/$b missing (see the build line at the top)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/proxy-bench-XXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
cat > "$work/broker.toml" <<EOT
brokerClusterName = "DefaultCluster"
brokerName = "broker-bench"
brokerId = 0
brokerIP1 = "127.0.0.1"
bindAddress = "127.0.0.1"
namesrvAddr = "127.0.0.1:29876"
listenPort = 20911
storePathRootDir = "$work/store"
mappedFileSizeCommitLog = 268435456
EOT
printf 'grpcServerPort = 28081\nbindAddress = "127.0.0.1"\nnamesrvAddr = "127.0.0.1:29876"\nmetricsPromExporterPort = 0\n%s\n' \
  "${PROXY_CONFIG:-}" > "$work/proxy.toml"
"$bin/namesrv" --listen 127.0.0.1:29876 > "$work/namesrv.log" 2>&1 & pids+=($!)
sleep 1
"$bin/broker" --config "$work/broker.toml" > "$work/broker.log" 2>&1 & pids+=($!); broker_pid=$!
sleep 4
RUST_LOG=warn "$bin/proxy" --config "$work/proxy.toml" > "$work/proxy.log" 2>&1 & pids+=($!); proxy_pid=$!
sleep 1
# CPU seconds (utime + stime) of a process so far.
cpu() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"; }
# "CPU us/msg" line: broker and proxy CPU between two readings, the load generator's own, per message.
per_msg() { # msgs broker_before broker_after proxy_before proxy_after loadgen_cpu
  awk -v n="$1" -v b0="$2" -v b1="$3" -v p0="$4" -v p1="$5" -v l="$6" 'BEGIN {
    if (n <= 0) { print "   CPU us/msg: no messages"; exit }
    printf "   CPU us/msg: broker %.1f, proxy %.1f, load generator %s\n", (b1 - b0) * 1e6 / n, (p1 - p0) * 1e6 / n,
      (l == "" ? "n/a" : sprintf("%.1f", l * 1e6 / n)) }'
}
json_field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }

echo "== direct: loadgen produce, $inflight in flight, $size-byte bodies, ${secs}s"
b0=$(cpu "$broker_pid"); p0=$(cpu "$proxy_pid")
"$bin/loadgen" produce --namesrv 127.0.0.1:29876 --topic BenchDirect --create-queues 8 --threads 1 \
  --inflight "$inflight" --size "$size" --duration "${secs}s" --warmup 2s > "$work/direct.out"
grep -E "^Send TPS" "$work/direct.out"
# loadgen's TPS covers the measured seconds; the CPU reading covers warm-up too, so count both.
n=$(grep -E "^Send TPS" "$work/direct.out" | sed -n 's/^Send TPS: \([0-9]*\).*/\1/p')
per_msg "$(( n * (secs + 2) ))" "$b0" "$(cpu "$broker_pid")" "$p0" "$(cpu "$proxy_pid")" ""
echo "== through the proxy: grpc_load send, $inflight callers"
"$bin/loadgen" produce --namesrv 127.0.0.1:29876 --topic BenchProxy --create-queues 8 --threads 1 \
  --inflight 1 --size "$size" --count 1 > /dev/null
b0=$(cpu "$broker_pid"); p0=$(cpu "$proxy_pid")
"$bin/examples/grpc_load" send --endpoint 127.0.0.1:28081 --topic BenchProxy --seconds "$secs" \
  --concurrency "$inflight" --size "$size" | tee "$work/send.out"
per_msg "$(json_field ok < "$work/send.out")" "$b0" "$(cpu "$broker_pid")" "$p0" "$(cpu "$proxy_pid")" \
  "$(json_field cpu_s < "$work/send.out")"
echo "== POP receive + ack through the proxy, batches of 32, $receivers receivers per shard-broker"
echo "   (what the send left on the two shard-brokers, received from both at once)"
b0=$(cpu "$broker_pid"); p0=$(cpu "$proxy_pid")
"$bin/examples/grpc_load" receive-ack --endpoint 127.0.0.1:28081 --topic BenchProxy --group GID_bench \
  --broker broker-bench-0,broker-bench-1 --receivers "$receivers" --invisible-ms 10000 | tee "$work/pop.out"
# The readings after the run include the 12 s check that nothing comes back (idle, a few pops).
per_msg "$(json_field acked < "$work/pop.out")" "$b0" "$(cpu "$broker_pid")" "$p0" "$(cpu "$proxy_pid")" \
  "$(json_field cpu_s < "$work/pop.out")"
echo "work dir: $work"
