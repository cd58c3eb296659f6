#!/usr/bin/env bash
# Installs Debian's `prometheus` package (the server binary, /usr/bin/prometheus) for
# broker/tests/prometheus_scrape.rs, which scrapes the broker's Apache-named metrics
# (metricsExporterType = PROM) with it and runs PromQL of RocketMQ 5 dashboards. Only the binary is
# used: the package's service is not started by the test. Idempotent; without root or apt-get it says
# so (the test then fails in CI and skips loudly elsewhere).
set -euo pipefail

if command -v prometheus >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-prometheus: cannot install prometheus (needs root and apt-get)" >&2
    exit 1
fi
echo "== installing prometheus"
# policy-rc.d keeps the package's postinst from starting the service (the test runs its own).
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    created_policy=1
fi
install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null
}
status=0
install || { apt-get update >/dev/null && install; } || status=$?
if [ "$created_policy" = 1 ]; then
    rm -f "$policy"
fi
exit "$status"
