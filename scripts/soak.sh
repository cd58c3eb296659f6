#!/usr/bin/env bash
# Bounded soak test (not run in CI): a mixed load against a name server, a master and optional
# slaves, with random SIGKILLs and SIGTERMs of every server process, then `loadgen verify` reads each
# topic back and checks that every acknowledged message is stored intact. The load, all at fixed
# rates (open loop) for the whole run:
#   - SoakTopic: `loadgen e2e`, synchronous sends consumed end to end;
#   - SoakBatch: `loadgen produce --mode async --batch 8`, asynchronous batches;
#   - SoakTimer: `loadgen produce --timer-delay-ms`, timer messages delivered later (verified on their
#     real topic after delivery);
#   - SoakTx: `loadgen transaction`, half messages committed, rolled back or left to the broker's
#     check-back by a rule on their number; verdict: every committed one readable, no rolled-back one;
#   - SoakOrderly: `loadgen orderly`, sends by sharding key to fixed queues and an orderly consumer
#     holding queue locks (LOCK_BATCH_MQ); verdict: each key's numbers in order, no gap, none missing;
#   - SoakRetry: `loadgen retry-dlq`, a consumer group handing every 10th message back
#     (CONSUMER_SEND_MSG_BACK); verdict: each of those in %DLQ%soak_retry_consumer after exactly
#     1 + SOAK_MAX_RECONSUME deliveries, every other one consumed once and not dead-lettered.
# These three check themselves after the load (waiting up to SOAK_SETTLE for the broker to deliver)
# and their verdicts are part of the final one.
# Samples RSS and open fds of every process and the store's disk use over time, says whether RSS and
# fds stay flat after warm-up (the last part of the run has no restarts, so one process of each
# lives long enough to show a trend), and draws them as chart.svg with the kills marked.
#
# Settings (environment):
#   SOAK_SECONDS=600        length of the load (default 10 minutes)
#   SOAK_RATE=2000          messages/s sent synchronously (SoakTopic)
#   SOAK_BATCH_RATE=        messages/s sent in async batches of 8 (default SOAK_RATE/4; 0 = none)
#   SOAK_TIMER_RATE=        timer messages/s (default SOAK_RATE/20; 0 = none)
#   SOAK_TIMER_DELAY_MS=3000  how long after its send a timer message is due
#   SOAK_TX_RATE=           transactions/s (default SOAK_RATE/50; 0 = none)
#   SOAK_ORDERLY_RATE=      ordered messages/s (default SOAK_RATE/50; 0 = none)
#   SOAK_RETRY_RATE=        messages/s of the retry-to-DLQ load (default SOAK_RATE/50; 0 = none)
#   SOAK_MAX_RECONSUME=2    maxReconsumeTimes of the retry load's send-backs
#   SOAK_SETTLE=240         seconds those three wait after the load for what they expect
#   SOAK_SIZE=1024          body bytes
#   SOAK_FLUSH=SYNC_FLUSH   flushDiskType (ASYNC_FLUSH loses acknowledged messages on SIGKILL by design)
#   SOAK_SHARDS=2           broker shardCount
#   SOAK_SEGMENT=268435456  mappedFileSizeCommitLog (smaller than RocketMQ's 1 GiB: SYNC_FLUSH zero-fills
#                           the next segment of every shard ahead of need)
#   SOAK_READ_CACHE=16777216  readCacheBytes per shard: a bounded cache that fills during warm-up (the
#                           broker's 64 MiB default takes minutes to fill at soak rates and looks like growth)
#   SOAK_DISK_RATIO=100     diskMaxUsedSpaceRatio: above it retention deletes expired segments at once
#                           (default 75); the brokers also run with cleanFileForciblyEnable = false, as
#                           above 85% disk use RocketMQ's rule deletes unexpired segments, which would
#                           count as loss here (a 2026-12-01 run lost its oldest segments that way)
#   SOAK_RESTART_MIN=20 SOAK_RESTART_MAX=60   seconds between kills
#   SOAK_KILL_NAMESRV=1     the name server is among the processes killed (restarted empty)
#   SOAK_STEADY_PERCENT=30  last part of the run without restarts (leak check on one process)
#   SOAK_WARMUP=60          seconds after each start not used for the flatness check
#   SOAK_SAMPLE=5           seconds between samples
#   SOAK_SLAVES=0           slave brokers (the master is then a SYNC_MASTER), killed at random too
#   SOAK_BUILD=release      release | debug (debug skips the long release build)
#   SOAK_BIN=DIR            use the namesrv, broker and loadgen binaries in DIR, build nothing
#   SOAK_OUT=target/soak-<time>   where logs, samples.csv, disk.csv, chart.svg and summary.txt go
#   SOAK_KEEP_STORE=0       1 keeps the store directory
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SOAK_SECONDS=${SOAK_SECONDS:-600}
SOAK_RATE=${SOAK_RATE:-2000}
SOAK_BATCH_RATE=${SOAK_BATCH_RATE:-$((SOAK_RATE / 4))}
SOAK_TIMER_RATE=${SOAK_TIMER_RATE:-$((SOAK_RATE / 20))}
SOAK_TIMER_DELAY_MS=${SOAK_TIMER_DELAY_MS:-3000}
SOAK_TX_RATE=${SOAK_TX_RATE:-$((SOAK_RATE / 50))}
SOAK_ORDERLY_RATE=${SOAK_ORDERLY_RATE:-$((SOAK_RATE / 50))}
SOAK_RETRY_RATE=${SOAK_RETRY_RATE:-$((SOAK_RATE / 50))}
SOAK_MAX_RECONSUME=${SOAK_MAX_RECONSUME:-2}
SOAK_SETTLE=${SOAK_SETTLE:-240}
SOAK_KILL_NAMESRV=${SOAK_KILL_NAMESRV:-1}
SOAK_SIZE=${SOAK_SIZE:-1024}
SOAK_FLUSH=${SOAK_FLUSH:-SYNC_FLUSH}
SOAK_SHARDS=${SOAK_SHARDS:-2}
SOAK_SEGMENT=${SOAK_SEGMENT:-268435456}
SOAK_READ_CACHE=${SOAK_READ_CACHE:-16777216}
SOAK_DISK_RATIO=${SOAK_DISK_RATIO:-100}
SOAK_RESTART_MIN=${SOAK_RESTART_MIN:-20}
SOAK_RESTART_MAX=${SOAK_RESTART_MAX:-60}
SOAK_STEADY_PERCENT=${SOAK_STEADY_PERCENT:-30}
SOAK_WARMUP=${SOAK_WARMUP:-60}
SOAK_SAMPLE=${SOAK_SAMPLE:-5}
SOAK_SLAVES=${SOAK_SLAVES:-0}
SOAK_BUILD=${SOAK_BUILD:-release}
SOAK_OUT=${SOAK_OUT:-target/soak-$(date -u +%Y%m%dT%H%M%SZ)}
SOAK_KEEP_STORE=${SOAK_KEEP_STORE:-0}

if [[ -n ${SOAK_BIN:-} ]]; then
    bin=$(cd "$SOAK_BIN" && pwd)
elif [[ $SOAK_BUILD == release ]]; then
    cargo build --release -p namesrv -p broker -p loadgen
    bin=$root/target/release
else
    cargo build -p namesrv -p broker -p loadgen
    bin=$root/target/debug
fi

mkdir -p "$SOAK_OUT"
out=$(cd "$SOAK_OUT" && pwd)
work=$(mktemp -d /tmp/soak.XXXXXX)
echo "soak: ${SOAK_SECONDS}s at ${SOAK_RATE} msg/s, ${SOAK_FLUSH}, ${SOAK_SHARDS} shards, slaves ${SOAK_SLAVES}; results in $out, store in $work"
echo "soak: loads (msg/s): e2e sync $SOAK_RATE, async batches $SOAK_BATCH_RATE, timer $SOAK_TIMER_RATE, transactions $SOAK_TX_RATE, orderly $SOAK_ORDERLY_RATE, retry-to-DLQ $SOAK_RETRY_RATE (max reconsume $SOAK_MAX_RECONSUME)"

# Free ports: one for the name server, and per broker p-2 .. p+4*shards (its fast port, HA port p+1
# and the ports of its shard-brokers, p+4N and p+4N-2) free.
read -r ns_port master_port slave_ports < <(python3 - "$SOAK_SLAVES" "$SOAK_SHARDS" <<'EOF'
import random, socket, sys
def free(p):
    for host in ("127.0.0.1", "0.0.0.0"):
        s = socket.socket()
        try:
            s.bind((host, p))
        except OSError:
            return False
        finally:
            s.close()
    return True
picked = []
def pick(span):
    while True:
        # Below the kernel's ephemeral range (32768 and up by default): a restarted broker must not
        # find its port taken by some client's outgoing connection.
        p = random.randint(20000, 32000)
        if all(free(q) and q not in picked for q in range(p - 2, p + span)):
            picked.extend(range(p - 2, p + span))
            return p
ns = pick(1)
span = 4 * int(sys.argv[2]) + 1
master = pick(span)
slaves = [str(pick(span)) for _ in range(int(sys.argv[1]))]
print(ns, master, ",".join(slaves) or "-")
EOF
)

pids_to_stop=()
cleanup() {
    local pid
    for pid in "${pids_to_stop[@]}" ${sampler_pid:-} ${loadgen_pid:-} ${extra_pids[@]:-}; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    for f in "$work"/*.pid; do
        [[ -f $f ]] && kill -KILL "$(cat "$f")" 2>/dev/null || true
    done
    if [[ $SOAK_KEEP_STORE != 1 ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# start_namesrv: starts the name server (an empty route table each time) and waits until it listens.
start_namesrv() {
    "$bin/namesrv" --listen "127.0.0.1:$ns_port" --kvConfigPath "$work/namesrv/kvConfig.json" \
        --configStorePath "$work/namesrv/namesrv.properties" >>"$out/namesrv.log" 2>&1 &
    echo $! >"$work/namesrv.pid"
    disown $!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$ns_port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "soak: name server not listening in 10 s" >&2
    return 1
}
start_namesrv

# broker_config NAME PORT ID ROLE
broker_config() {
    local name=$1 port=$2 id=$3 role=$4
    cat <<EOF
brokerClusterName = "SoakCluster"
brokerName = "soak-broker"
brokerId = $id
brokerRole = "$role"
brokerIP1 = "127.0.0.1"
listenPort = $port
namesrvAddr = "127.0.0.1:$ns_port"
storePathRootDir = "$work/$name"
shardCount = $SOAK_SHARDS
flushDiskType = "$SOAK_FLUSH"
mappedFileSizeCommitLog = $SOAK_SEGMENT
readCacheBytes = $SOAK_READ_CACHE
diskMaxUsedSpaceRatio = $SOAK_DISK_RATIO
cleanFileForciblyEnable = false
registerNameServerPeriod = 5000
# Unknown transactions are checked back 6 s after their send, then every 10 s (RocketMQ: every 60 s),
# so the check-back resolves them within the run.
transactionTimeOut = 6000
transactionCheckInterval = 10000
EOF
}

# start_broker NAME: starts it and waits for its boot line (60 s at most).
start_broker() {
    local name=$1 before booted
    before=$(grep -c "boot success" "$out/$name.log" 2>/dev/null || true)
    "$bin/broker" --config "$work/$name.toml" >>"$out/$name.log" 2>&1 &
    echo $! >"$work/$name.pid"
    disown $!   # killed on purpose: no job-control noise
    for _ in $(seq 600); do
        booted=$(grep -c "boot success" "$out/$name.log" 2>/dev/null || true)
        if (( ${booted:-0} > ${before:-0} )); then
            return 0
        fi
        if ! kill -0 "$(cat "$work/$name.pid")" 2>/dev/null; then
            echo "soak: $name exited during start; see $out/$name.log" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "soak: $name not ready in 60 s" >&2
    return 1
}

# stop_process NAME SIGNAL: signals it and waits for the exit (SIGKILL after 40 s).
stop_process() {
    local name=$1 sig=$2 pid
    pid=$(cat "$work/$name.pid")
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 400); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "soak: $name ignored SIG$sig for 40 s; SIGKILL" | tee -a "$out/events.csv"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

broker_config master "$master_port" 0 "$( ((SOAK_SLAVES > 0)) && echo SYNC_MASTER || echo ASYNC_MASTER )" >"$work/master.toml"
start_broker master
slaves=()
if [[ $slave_ports != "-" ]]; then
    i=1
    for p in ${slave_ports//,/ }; do
        # Slaves need HA (brokerRole = SLAVE replicating from the master); untested until HA is merged.
        broker_config "slave$i" "$p" "$i" SLAVE >"$work/slave$i.toml"
        start_broker "slave$i"
        slaves+=("slave$i")
        i=$((i + 1))
    done
fi

# Samples RSS (kB) and open fds of every process (servers and load generators), and the stores' size.
# Without -e / pipefail: a process that exits while it is sampled must not end the sampling.
(
    set +e +o pipefail
    echo "t_s,process,pid,rss_kb,fds" >"$out/samples.csv"
    echo "t_s,store_kb" >"$out/disk.csv"
    t0=$(date +%s)
    while true; do
        for f in "$work"/*.pid; do
            name=$(basename "$f" .pid)
            pid=$(cat "$f" 2>/dev/null || true)
            [[ -n $pid && -r /proc/$pid/status ]] || continue
            rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
            fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
            [[ -n $rss ]] && echo "$(( $(date +%s) - t0 )),$name,$pid,$rss,$fds" >>"$out/samples.csv"
        done
        echo "$(( $(date +%s) - t0 )),$(du -sk "$work" 2>/dev/null | cut -f1)" >>"$out/disk.csv"
        sleep "$SOAK_SAMPLE"
    done
) &
sampler_pid=$!

"$bin/loadgen" e2e --namesrv "127.0.0.1:$ns_port" --topic SoakTopic --create-queues 8 \
    --rate "$SOAK_RATE" --size "$SOAK_SIZE" --inflight 256 --timeout 3s --duration "${SOAK_SECONDS}s" \
    --interval 10s --drain 10s --acked-log "$out/acked.log" --json "$out/loadgen.json" >"$out/loadgen.log" 2>&1 &
loadgen_pid=$!
echo "$loadgen_pid" >"$work/loadgen-e2e.pid"
extra_pids=()
extra_topics=()
# start_producer NAME TOPIC RATE ARGS...: a further producer for the whole run, with its acked log.
start_producer() {
    local name=$1 topic=$2 rate=$3
    shift 3
    (( rate > 0 )) || return 0
    "$bin/loadgen" produce --namesrv "127.0.0.1:$ns_port" --topic "$topic" --create-queues 8 \
        --rate "$rate" --size "$SOAK_SIZE" --timeout 3s --duration "${SOAK_SECONDS}s" --interval 10s \
        --acked-log "$out/acked-$name.log" --json "$out/loadgen-$name.json" "$@" >"$out/loadgen-$name.log" 2>&1 &
    extra_pids+=($!)
    echo $! >"$work/loadgen-$name.pid"
    extra_topics+=("$name:$topic")
}
start_producer batch SoakBatch "$SOAK_BATCH_RATE" --mode async --batch 8 --inflight 32
start_producer timer SoakTimer "$SOAK_TIMER_RATE" --timer-delay-ms "$SOAK_TIMER_DELAY_MS" --inflight 16
# start_workload NAME SUBCOMMAND TOPIC RATE ARGS...: a load that checks itself (workload-NAME.json).
start_workload() {
    local name=$1 sub=$2 topic=$3 rate=$4
    shift 4
    (( rate > 0 )) || return 0
    "$bin/loadgen" "$sub" --namesrv "127.0.0.1:$ns_port" --topic "$topic" --create-queues 8 \
        --rate "$rate" --duration "${SOAK_SECONDS}s" --settle "${SOAK_SETTLE}s" --timeout 3s \
        --json "$out/workload-$name.json" "$@" >"$out/loadgen-$name.log" 2>&1 &
    extra_pids+=($!)
    echo $! >"$work/loadgen-$name.pid"
}
start_workload tx transaction SoakTx "$SOAK_TX_RATE"
start_workload orderly orderly SoakOrderly "$SOAK_ORDERLY_RATE"
start_workload retry retry-dlq SoakRetry "$SOAK_RETRY_RATE" --max-reconsume-times "$SOAK_MAX_RECONSUME"

start=$(date +%s)
restart_until=$(( start + SOAK_SECONDS * (100 - SOAK_STEADY_PERCENT) / 100 ))
next=$(( start + SOAK_RESTART_MIN + RANDOM % (SOAK_RESTART_MAX - SOAK_RESTART_MIN + 1) ))
restarts=0
echo "t_s,event" >"$out/events.csv"
while kill -0 "$loadgen_pid" 2>/dev/null; do
    now=$(date +%s)
    if (( now >= next && now < restart_until )); then
        victims=(master "${slaves[@]}")
        (( SOAK_KILL_NAMESRV == 1 )) && victims+=(namesrv)
        victim=${victims[RANDOM % ${#victims[@]}]}
        sig=$( ((RANDOM % 2)) && echo KILL || echo TERM )
        echo "$((now - start)),SIG$sig $victim" >>"$out/events.csv"
        echo "soak: t=$((now - start))s SIG$sig $victim"
        stop_process "$victim" "$sig"
        down_at=$(date +%s)
        if [[ $victim == namesrv ]]; then start_namesrv; else start_broker "$victim"; fi
        echo "$(( $(date +%s) - start )),restarted $victim (down $(( $(date +%s) - down_at ))s)" >>"$out/events.csv"
        restarts=$((restarts + 1))
        next=$(( $(date +%s) + SOAK_RESTART_MIN + RANDOM % (SOAK_RESTART_MAX - SOAK_RESTART_MIN + 1) ))
    fi
    sleep 1
done
loadgen_rc=0
wait "$loadgen_pid" || loadgen_rc=$?
loadgen_pid=
extra_rc=0
for pid in "${extra_pids[@]}"; do wait "$pid" || extra_rc=$?; done
extra_pids=()
rm -f "$work"/loadgen-*.pid
# Timer messages sent last are due SOAK_TIMER_DELAY_MS later; let them be delivered.
sleep $(( SOAK_TIMER_DELAY_MS / 1000 + 3 ))
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
sampler_pid=

verify_rc=0
"$bin/loadgen" verify --namesrv "127.0.0.1:$ns_port" --topic SoakTopic --acked-log "$out/acked.log" \
    --json "$out/verify.json" | tee "$out/verify.log" || verify_rc=$?
for entry in "${extra_topics[@]}"; do
    name=${entry%%:*} topic=${entry#*:}
    "$bin/loadgen" verify --namesrv "127.0.0.1:$ns_port" --topic "$topic" --acked-log "$out/acked-$name.log" \
        --json "$out/verify-$name.json" | tee "$out/verify-$name.log" || verify_rc=$?
done
python3 "$root/scripts/soak_chart.py" "$out" || echo "soak: chart failed" >&2

workloads=()
(( SOAK_TX_RATE > 0 )) && workloads+=(tx)
(( SOAK_ORDERLY_RATE > 0 )) && workloads+=(orderly)
(( SOAK_RETRY_RATE > 0 )) && workloads+=(retry)
python3 - "$out" "$SOAK_WARMUP" "$restarts" "$loadgen_rc" "$verify_rc" "$extra_rc" "${workloads[@]}" <<'EOF' | tee "$out/summary.txt"
import csv, glob, json, sys
out, warmup, restarts, loadgen_rc, verify_rc, extra_rc = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
expected_workloads = sys.argv[7:]
rows = list(csv.DictReader(open(f"{out}/samples.csv")))
lg = json.load(open(f"{out}/loadgen.json")) if loadgen_rc == 0 else {}
ver = json.load(open(f"{out}/verify.json"))
print(f"kills and restarts: {restarts}")
send, cons = lg.get("produce", {}), lg.get("consume", {})
if send:
    print(f"loadgen: sent ok {send['messages']} msgs ({send['tps']:.0f}/s), send failed {send['send_failed']}, "
          f"response failed {send['response_failed']}, missed (open loop) {send['missed_open_loop']}, errors {json.dumps(send['errors'])}; "
          f"send RT ms p50 {send['rt_ms'].get('p50')} p99 {send['rt_ms'].get('p99')} max {send['rt_ms'].get('max')}; "
          f"e2e consumed {cons.get('messages')}, e2e ms p99 {cons.get('e2e_ms', {}).get('p99')}")
else:
    print(f"loadgen: exit code {loadgen_rc}")
print(f"verify: acknowledged {ver['acked']} msgs / {ver['acked_bytes']} B, read back {ver['found']} / {ver['found_bytes']} B, "
      f"missing {ver['missing']}, mismatched {ver['mismatched']}, duplicates {ver['duplicates']}, stored without ack {ver['unacknowledged_stored']}")
ok = verify_rc == 0 and ver["missing"] == 0 and ver["mismatched"] == 0 and ver["acked"] > 0
for path in sorted(glob.glob(f"{out}/verify-*.json")):
    v = json.load(open(path))
    name = path.rsplit("verify-", 1)[1][:-5]
    lgx = {}
    try:
        lgx = json.load(open(f"{out}/loadgen-{name}.json")).get("produce", {})
    except (OSError, ValueError):
        pass
    print(f"{name}: sent ok {lgx.get('messages')} ({lgx.get('tps', 0):.0f}/s), failed {lgx.get('send_failed')}; "
          f"verify: acknowledged {v['acked']}, read back {v['found']}, missing {v['missing']}, mismatched {v['mismatched']}, "
          f"duplicates {v['duplicates']}")
    ok = ok and v["missing"] == 0 and v["mismatched"] == 0 and v["acked"] > 0
for path in sorted(glob.glob(f"{out}/workload-*.json")):
    name = path.rsplit("workload-", 1)[1][:-5]
    w = json.load(open(path))
    fields = ", ".join(f"{k} {v}" for k, v in w.items() if k != "ok" and not isinstance(v, list) or (isinstance(v, list) and v))
    print(f"{name}: {'OK' if w.get('ok') else 'FAILED'}: {fields}")
    ok = ok and bool(w.get("ok"))
for name in expected_workloads:
    if not glob.glob(f"{out}/workload-{name}.json"):
        print(f"{name}: no verdict (see loadgen-{name}.log)")
        ok = False
print(f"further producers' and workloads' exit code: {extra_rc}")
flat_all = True
by_proc = {}
for r in rows:
    by_proc.setdefault((r["process"], r["pid"]), []).append((int(r["t_s"]), int(r["rss_kb"]), int(r["fds"])))
for (name, pid), s in by_proc.items():
    life = s[-1][0] - s[0][0]
    after = [x for x in s if x[0] - s[0][0] >= warmup]
    line = f"{name} pid {pid}: lived {life}s, RSS {s[0][1]//1024}..{max(x[1] for x in s)//1024} MiB, fds {min(x[2] for x in s)}..{max(x[2] for x in s)}"
    if len(after) >= 6:
        third = max(1, len(after) // 3)
        head, tail = after[:third], after[-third:]
        rss_head, rss_tail = max(x[1] for x in head), max(x[1] for x in tail)
        fd_head, fd_tail = max(x[2] for x in head), max(x[2] for x in tail)
        # Flat: the last third's peak within 10% (+8 MiB) of the first third's, fds within +4.
        flat = rss_tail <= rss_head * 1.10 + 8192 and fd_tail <= fd_head + 4
        # The servers decide the verdict; the load generators are shown for information.
        if not name.startswith("loadgen"):
            flat_all &= flat
        line += (f"; after warm-up RSS peak first third {rss_head//1024} MiB, last third {rss_tail//1024} MiB; "
                 f"fds {fd_head} -> {fd_tail}: {'flat' if flat else 'GROWING'}")
    print(line)
print("RESULT:", "zero acknowledged messages lost" if ok else "ACKNOWLEDGED MESSAGES LOST OR CHECK FAILED",
      "| RSS/fds", "flat after warm-up" if flat_all else "NOT flat")
sys.exit(0 if ok and flat_all else 1)
EOF
