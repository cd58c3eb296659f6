# Shared by the bench scripts (sourced): a name server and a broker on a fresh store under $WORK, and
# stopping them. The caller sets WORK (a temp dir) and LOADGEN (the loadgen binary).
NS_PID="" BROKER_PID=""

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_pair BIN_DIR CONFIG_LINES TOPIC...: starts BIN_DIR's name server and broker (ASYNC_MASTER,
# store $WORK/store) with CONFIG_LINES added to the config, then creates each TOPIC with QUEUES [8]
# write queues per broker (per shard-broker when shards are brokers) once the broker serves. Sets NS
# (the name server's address), NS_PID and BROKER_PID.
start_pair() {
    local bin=$1 extra=$2 ns_port broker_port topic
    shift 2
    ns_port=$(free_port)
    broker_port=$(free_port)
    NS="127.0.0.1:$ns_port"
    mkdir -p "$WORK/store"
    cat >"$WORK/broker.toml" <<EOF
brokerClusterName = "DefaultCluster"
brokerName = "broker-bench"
brokerId = 0
brokerIP1 = "127.0.0.1"
bindAddress = "127.0.0.1"
namesrvAddr = "$NS"
listenPort = $broker_port
storePathRootDir = "$WORK/store"
brokerRole = "ASYNC_MASTER"
autoCreateTopicEnable = true
$extra
EOF
    "$bin/namesrv" --listen "$NS" >"$WORK/namesrv.log" 2>&1 &
    NS_PID=$!
    sleep 0.5
    "$bin/broker" --config "$WORK/broker.toml" >"$WORK/broker.log" 2>&1 &
    BROKER_PID=$!
    for topic in "$@"; do
        for _ in $(seq 1 50); do
            if "$LOADGEN" produce --namesrv "$NS" --topic "$topic" --create-queues "${QUEUES:-8}" --count 1 --size 16 \
                --timeout 2s >/dev/null 2>&1; then
                continue 2
            fi
            sleep 0.2
        done
        echo "broker from $bin did not become ready; see $WORK/broker.log" >&2
        return 1
    done
}

# stop_pair [PID...]: stops the given processes (e.g. a background loadgen), the broker and the name
# server, and removes the store.
stop_pair() {
    local p
    for p in "$@" $BROKER_PID $NS_PID; do kill "$p" 2>/dev/null || true; done
    for p in "$@" $BROKER_PID $NS_PID; do wait "$p" 2>/dev/null || true; done
    NS_PID="" BROKER_PID=""
    rm -rf "$WORK/store"
}

# cpu_ticks PID...: utime + stime of the processes, in clock ticks (getconf CLK_TCK per second).
cpu_ticks() {
    local p total=0 fields
    for p in "$@"; do
        # Fields after the ")" that ends the command name: utime is the 12th, stime the 13th.
        fields=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || continue
        total=$((total + $(echo "$fields" | awk '{print $12 + $13}')))
    done
    echo "$total"
}

# cpu_us_per_msg TICKS JSON: microseconds of CPU per message, from a tick count and a loadgen --json
# summary (messages acknowledged including warm-up; for a consume-only run, messages consumed).
cpu_us_per_msg() {
    python3 - "$1" "$2" "$(getconf CLK_TCK)" <<'PY'
import json, sys
ticks, path, hz = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = json.load(open(path))
msgs = s.get("produce", {}).get("ok_incl_warmup") or s.get("consume", {}).get("messages_incl_warmup") or 0
print("%.2f" % (ticks * 1e6 / hz / msgs) if msgs else "-")
PY
}

# require_disk_room DIR MAX_PERCENT: refuses to go on when the file system of DIR is fuller than
# MAX_PERCENT [75]. Our broker turns read-only above diskMaxUsedSpaceRatio (Apache's limit is 90%),
# and a run that crosses it mid-way measures refusals, not throughput.
require_disk_room() {
    local used
    used=$(df --output=pcent "$1" | tail -1 | tr -dc 0-9)
    if [ "$used" -gt "${2:-75}" ]; then
        echo "the file system of $1 is ${used}% full (limit ${2:-75}%): free space first" >&2
        return 1
    fi
}
