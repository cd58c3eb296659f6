#!/usr/bin/env bash
# Sends through the gRPC proxy against the same sends straight to the broker, on one machine:
# a name server and broker of this checkout, `loadgen produce` direct, then `proxy` in front and its
# gRPC load generator (proxy/examples/grpc_load) with the same body size and requests in flight.
# Also POP receive + ack through the proxy in batches of 32 (BATCH_ACK_MESSAGE).
#
#   cargo build --release -p broker -p namesrv -p loadgen -p proxy && \
#     cargo build --release -p proxy --example grpc_load
#   bench/proxy.sh [seconds (10)] [inflight (64)] [size (128)]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${CARGO_TARGET_DIR:-$repo/target}/release
secs=${1:-10}; inflight=${2:-64}; size=${3:-128}
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
printf 'grpcServerPort = 28081\nbindAddress = "127.0.0.1"\nnamesrvAddr = "127.0.0.1:29876"\nmetricsPromExporterPort = 0\n' \
  > "$work/proxy.toml"
"$bin/namesrv" --listen 127.0.0.1:29876 > "$work/namesrv.log" 2>&1 & pids+=($!)
sleep 1
"$bin/broker" --config "$work/broker.toml" > "$work/broker.log" 2>&1 & pids+=($!)
sleep 4
RUST_LOG=warn "$bin/proxy" --config "$work/proxy.toml" > "$work/proxy.log" 2>&1 & pids+=($!)
sleep 1
echo "== direct: loadgen produce, $inflight in flight, $size-byte bodies, ${secs}s"
"$bin/loadgen" produce --namesrv 127.0.0.1:29876 --topic BenchDirect --create-queues 8 --threads 1 \
  --inflight "$inflight" --size "$size" --duration "${secs}s" --warmup 2s | grep -E "Send TPS"
echo "== through the proxy: grpc_load send, $inflight callers"
"$bin/loadgen" produce --namesrv 127.0.0.1:29876 --topic BenchProxy --create-queues 8 --threads 1 \
  --inflight 1 --size "$size" --count 1 > /dev/null
"$bin/examples/grpc_load" send --endpoint 127.0.0.1:28081 --topic BenchProxy --seconds "$secs" \
  --concurrency "$inflight" --size "$size"
echo "== POP receive + ack through the proxy, batches of 32 (what the send left on each shard-broker)"
for name in broker-bench-0 broker-bench-1 broker-bench; do
  "$bin/examples/grpc_load" receive-ack --endpoint 127.0.0.1:28081 --topic BenchProxy --group GID_bench \
    --broker "$name" --invisible-ms 30000 2>/dev/null || true
done
echo "work dir: $work"
