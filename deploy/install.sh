#!/usr/bin/env bash
# Installs rocketmq-rs on a systemd host: binaries, the `rocketmq` user, config and store folders,
# systemd units; optionally enables and starts them.
#
#   sudo deploy/install.sh [--bin-dir DIR] [--namesrv] [--broker CONF.toml]... [--console] [--proxy]
#                          [--controller CONF] [--enable]
#
#   --bin-dir DIR    where namesrv, broker and mqadmin were built (default target/release;
#                    build them with `cargo build --release -p namesrv -p broker -p mqadmin`)
#   --namesrv        install /etc/rocketmq/namesrv.env (kept if present); enable namesrv.service
#   --broker FILE    install FILE as /etc/rocketmq/<name>.toml (kept if present) and make its store
#                    folder; <name> is the file name without .toml, the unit is broker@<name>
#   --console        install the web console (rocketmq-console, built with `-p console`) and
#                    /etc/rocketmq/console.env (kept if present); enable console.service
#   --proxy          install the gRPC proxy for RocketMQ 5 SDKs (its binary from --bin-dir, built with
#                    `cargo build --release -p proxy`) and /etc/rocketmq/proxy.toml (kept if present);
#                    enable proxy.service
#   --controller FILE  install the controller (controller mode; its binary from --bin-dir, built with
#                    `cargo build --release -p controller`) with FILE as /etc/rocketmq/controller.conf
#                    (kept if present; see deploy/conf/controller-1.conf); enable controller.service
#   --enable         systemctl enable --now the selected units
#   --destdir DIR    stage everything under DIR instead of / (no user creation, no systemctl);
#                    used by the tests, which then run `systemd-analyze verify --root=DIR`
# Example (first master of deploy/conf/2m-2s-sync on its host):
#   sudo deploy/install.sh --namesrv --broker deploy/conf/2m-2s-sync/broker-a.toml --enable
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin_dir=$repo/target/release
destdir=""
namesrv=0
console=0
proxy=0
controller=""
enable=0
brokers=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --destdir) destdir=$2; shift 2 ;;
    --namesrv) namesrv=1; shift ;;
    --console) console=1; shift ;;
    --broker) brokers+=("$2"); shift 2 ;;
    --proxy) proxy=1; shift ;;
    --controller) controller=$2; shift 2 ;;
    --enable) enable=1; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done

bins="namesrv broker mqadmin"
if [ "$console" = 1 ]; then bins="$bins console"; fi
for bin in $bins; do
  if [ ! -x "$bin_dir/$bin" ]; then
    echo "$bin_dir/$bin is missing: cargo build --release -p namesrv -p broker -p mqadmin -p console" >&2
    exit 1
  fi
done
if [ "$proxy" = 1 ] && [ ! -x "$bin_dir/proxy" ]; then
  echo "$bin_dir/proxy is missing: cargo build --release -p proxy" >&2
  exit 1
fi
if [ -n "$controller" ] && [ ! -x "$bin_dir/controller" ]; then
  echo "$bin_dir/controller is missing: cargo build --release -p controller" >&2
  exit 1
fi
if [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
  echo "run as root (or stage with --destdir)" >&2
  exit 1
fi

root=${destdir:-}
install -d -m 0755 "$root/usr/local/bin" "$root/etc/rocketmq" "$root/etc/systemd/system" \
  "$root/usr/local/share/doc/rocketmq-rs"
install -m 0755 "$bin_dir/namesrv" "$root/usr/local/bin/rocketmq-namesrv"
install -m 0755 "$bin_dir/broker" "$root/usr/local/bin/rocketmq-broker"
install -m 0755 "$bin_dir/mqadmin" "$root/usr/local/bin/mqadmin"
install -m 0644 "$repo/deploy/systemd/namesrv.service" "$repo/deploy/systemd/broker@.service" \
  "$root/etc/systemd/system/"
install -m 0644 "$repo/deploy/README.md" "$root/usr/local/share/doc/rocketmq-rs/README.md"

if [ -z "$destdir" ] && ! id rocketmq >/dev/null 2>&1; then
  useradd --system --home-dir /var/lib/rocketmq --shell /usr/sbin/nologin --user-group rocketmq
fi
own() { if [ -z "$destdir" ]; then chown -R rocketmq:rocketmq "$@"; fi; }
install -d -m 0750 "$root/var/lib/rocketmq"
own "$root/var/lib/rocketmq"

units=()
if [ "$proxy" = 1 ]; then
  install -m 0755 "$bin_dir/proxy" "$root/usr/local/bin/rocketmq-proxy"
  install -m 0644 "$repo/deploy/systemd/proxy.service" "$root/etc/systemd/system/"
  if [ ! -e "$root/etc/rocketmq/proxy.toml" ]; then
    install -m 0644 "$repo/deploy/conf/proxy.toml" "$root/etc/rocketmq/proxy.toml"
  fi
  units+=(proxy.service)
fi
if [ -n "$controller" ]; then
  install -m 0755 "$bin_dir/controller" "$root/usr/local/bin/rocketmq-controller"
  install -m 0644 "$repo/deploy/systemd/controller.service" "$root/etc/systemd/system/"
  if [ ! -e "$root/etc/rocketmq/controller.conf" ]; then
    install -m 0644 "$controller" "$root/etc/rocketmq/controller.conf"
  fi
  install -d -m 0750 "$root/var/lib/rocketmq/controller"
  own "$root/var/lib/rocketmq/controller"
  units+=(controller.service)
fi
if [ "$namesrv" = 1 ]; then
  if [ ! -e "$root/etc/rocketmq/namesrv.env" ]; then
    install -m 0644 "$repo/deploy/conf/namesrv.env" "$root/etc/rocketmq/namesrv.env"
  fi
  units+=(namesrv.service)
fi
if [ "$console" = 1 ]; then
  install -m 0755 "$bin_dir/console" "$root/usr/local/bin/rocketmq-console"
  install -m 0644 "$repo/deploy/systemd/console.service" "$root/etc/systemd/system/"
  if [ ! -e "$root/etc/rocketmq/console.env" ]; then
    # It may hold the console's ACL secret: readable by root and the service user only.
    install -m 0640 "$repo/deploy/conf/console.env" "$root/etc/rocketmq/console.env"
    if [ -z "$destdir" ]; then chgrp rocketmq "$root/etc/rocketmq/console.env"; fi
  fi
  units+=(console.service)
fi
for conf in "${brokers[@]}"; do
  name=$(basename "$conf" .toml)
  if [ -e "$root/etc/rocketmq/$name.toml" ]; then
    echo "keeping existing /etc/rocketmq/$name.toml"
  else
    install -m 0644 "$conf" "$root/etc/rocketmq/$name.toml"
  fi
  # The store folder named by the config (storePathRootDir), owned by the service user.
  store=$(sed -n 's/^storePathRootDir *= *"\(.*\)"/\1/p' "$root/etc/rocketmq/$name.toml" | head -n 1)
  store=${store:-/var/lib/rocketmq/$name}
  install -d -m 0750 "$root$store"
  own "$root$store"
  units+=("broker@$name.service")
done

if [ -z "$destdir" ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload
  if [ "$enable" = 1 ] && [ ${#units[@]} -gt 0 ]; then
    systemctl enable --now "${units[@]}"
  fi
fi
echo "installed under ${destdir:-/}: binaries in /usr/local/bin, configs in /etc/rocketmq, units ${units[*]:-(none selected)}"
