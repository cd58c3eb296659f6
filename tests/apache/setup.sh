#!/usr/bin/env bash
# Installs sets of Apache RocketMQ's own artifacts from Maven Central (poms/<set>.xml): a JDK and Maven
# from apt when missing, then `mvn dependency:copy-dependencies` of the set into the cache (lib.sh).
# Nothing is built. Safe to run again: a set is copied again only when its pom changes.
#
#   tests/apache/setup.sh SET...     e.g. rocketmq-4.9.8 rocketmq-5.5.0
#
# Exits 3, with one line per set "MISSING from Maven Central: ...", when Maven cannot serve a set (the
# artifacts Maven named, or why it failed): callers skip what needs that set and say so.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

[ $# -gt 0 ] || { echo "usage: $0 SET..." >&2; exit 2; }

if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    echo "apache setup: a JDK and Maven from apt"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
fi

missing=0
for set in "$@"; do
    pom=$(apache_set_pom "$set")
    dir="$APACHE_CACHE/$set"
    stamp=$(sha256sum "$pom" | cut -d' ' -f1)
    if [ "$(cat "$dir/ready" 2>/dev/null)" = "$stamp" ]; then
        continue
    fi
    echo "apache setup: $set from Maven Central"
    rm -rf "$dir/lib" "$dir/ready"
    mkdir -p "$dir"
    log="$dir/mvn.log"
    if mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$dir/lib" >"$log" 2>&1; then
        echo "$stamp" >"$dir/ready"
    else
        # Maven names what it could not resolve; otherwise its first error says why.
        what=$(grep -o 'Could not find artifact [^ ]*' "$log" | sed 's/Could not find artifact //' | sort -u | tr '\n' ' ')
        [ -n "$what" ] || what=$(grep -m1 'ERROR' "$log" | cut -c1-300)
        echo "MISSING from Maven Central: set $set ($pom): $what (log: $log)"
        missing=1
    fi
done
[ "$missing" -eq 0 ] || exit 3
