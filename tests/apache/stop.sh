#!/usr/bin/env bash
# Stops what start.sh started in each DIR: SIGTERM (Apache's servers flush and unregister on it), then
# SIGKILL after STOP_TIMEOUT seconds (default 30). Brokers first, then the rest, so a broker can still
# unregister from its name server.
#
#   tests/apache/stop.sh DIR...
set -uo pipefail
stop_one() {
    local pidfile=$1 pid i
    pid=$(cat "$pidfile" 2>/dev/null) || return 0
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
    for ((i = 0; i < ${STOP_TIMEOUT:-30} * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}
for role in broker proxy controller namesrv; do
    for dir in "$@"; do
        [ -f "$dir/$role.pid" ] && stop_one "$dir/$role.pid"
    done
done
exit 0
