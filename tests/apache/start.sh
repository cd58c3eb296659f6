#!/usr/bin/env bash
# Starts one of Apache RocketMQ's servers from a set's jars, in the background, and waits until it says
# it is up. Apache's distribution scripts are not on Maven; this is the small part of them the tests
# and benchmarks need: the main class, the JVM settings, a private ROCKETMQ_HOME and user.home.
#
#   tests/apache/start.sh SET ROLE CONFIG DIR     ROLE: namesrv, broker, controller (CONFIG: properties)
#                                                 or proxy (CONFIG: rmq-proxy.json; PROXY_MODE, default cluster)
#
# Prints the process id as its last line once the server is up. DIR gets ROLE.out (stdout and stderr),
# ROLE.cmd (the command line), ROLE.pid, and home/logs/rocketmqlogs/ (the server's own logs); stop.sh DIR
# stops what was started there. Fails, with the output's tail, when the server exits or is not up in
# START_TIMEOUT seconds (default 120).
#
# JVM: the broker gets Apache's runbroker.sh settings (G1, region 16m, reserve 25%, IHOP 30%, pre-touch,
# no biased locking where the JDK has it) with RMQ_BROKER_HEAP (2g), RMQ_BROKER_DIRECT (4g) and
# RMQ_PRETOUCH (1) for the sizes; the other roles G1 with RMQ_SERVER_HEAP (proxy 1g, others 512m).
# JAVA_OPT_EXT: more options for any role.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
[ $# -eq 4 ] || { echo "usage: $0 SET ROLE CONFIG DIR" >&2; exit 2; }
set_name=$1 role=$2 config=$3 dir=$4
lib=$(apache_lib "$set_name")
home=$(apache_home "$set_name")
mkdir -p "$dir/home"
dir="$(cd "$dir" && pwd)"
config="$(cd "$(dirname "$config")" && pwd)/$(basename "$config")"

case "$role" in
namesrv) main=org.apache.rocketmq.namesrv.NamesrvStartup args=(-c "$config") ready="boot success" ;;
broker) main=org.apache.rocketmq.broker.BrokerStartup args=(-c "$config") ready="boot success" ;;
controller) main=org.apache.rocketmq.controller.ControllerStartup args=(-c "$config") ready="boot success" ;;
proxy) main=org.apache.rocketmq.proxy.ProxyStartup args=(-pc "$config" -pm "${PROXY_MODE:-cluster}") ready="startup successfully" ;;
*) echo "unknown role '$role' (namesrv, broker, controller, proxy)" >&2; exit 2 ;;
esac

opts=("${APACHE_JDK_OPENS[@]}" -server -XX:+UseG1GC -XX:-OmitStackTraceInFastThrow)
if [ "$role" = broker ]; then
    heap=${RMQ_BROKER_HEAP:-2g}
    opts+=(-Xms"$heap" -Xmx"$heap" -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25
        -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0
        -XX:MaxDirectMemorySize="${RMQ_BROKER_DIRECT:-4g}" -XX:-UseLargePages)
    [ "${RMQ_PRETOUCH:-1}" = 0 ] || opts+=(-XX:+AlwaysPreTouch)
else
    default_heap=512m
    [ "$role" = proxy ] && default_heap=1g
    heap=${RMQ_SERVER_HEAP:-$default_heap}
    opts+=(-Xms"$heap" -Xmx"$heap")
fi
# The server's own logs, its default store and anything else it puts in ~ stay in DIR.
opts+=("-Drocketmq.home.dir=$home" "-Duser.home=$dir/home" "-Drocketmq.log.role=$role")

java=$(apache_java)
# shellcheck disable=SC2206 # JAVA_OPT_EXT is a list of options
cmd=("$java" "${opts[@]}" ${JAVA_OPT_EXT:-} -cp "$lib/*" "$main" "${args[@]}")
printf '%q ' "${cmd[@]}" >"$dir/$role.cmd"
echo >>"$dir/$role.cmd"
ROCKETMQ_HOME="$home" setsid "${cmd[@]}" >"$dir/$role.out" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$dir/$role.pid"

deadline=$((SECONDS + ${START_TIMEOUT:-120}))
until grep -q "$ready" "$dir/$role.out" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "Apache $role ($set_name) exited before it was up; the end of $dir/$role.out:" >&2
        tail -20 "$dir/$role.out" >&2
        exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "Apache $role ($set_name) not up after ${START_TIMEOUT:-120} s; the end of $dir/$role.out:" >&2
        tail -20 "$dir/$role.out" >&2
        kill -9 "$pid" 2>/dev/null || true
        exit 1
    fi
    sleep 0.2
done
echo "$pid"
