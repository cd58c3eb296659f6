#!/usr/bin/env bash
# Sourced by the scripts of tests/apache/: where a set of Apache RocketMQ artifacts lives once
# setup.sh has copied it from Maven Central, and how its Java programs are started.
#
# A set is one pom in poms/ (rocketmq-4.9.8, rocketmq-4.9.7, rocketmq-5.5.0, rocketmq-client-java-5.2.0);
# its jars go to $APACHE_CACHE/<set>/lib. The cache is in the checkout (git-ignored), not under $HOME:
# the test harnesses give clients a HOME of their own. Maven's ~/.m2 keeps the downloads, so a fresh
# checkout only copies them again. APACHE_ROCKETMQ_CACHE moves it.

APACHE_KIT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
APACHE_CACHE="${APACHE_ROCKETMQ_CACHE:-$APACHE_KIT_DIR/cache}"

# apache_set_pom SET: the pom of a set, or an error naming the sets there are.
apache_set_pom() {
    local pom="$APACHE_KIT_DIR/poms/$1.xml"
    if [ ! -f "$pom" ]; then
        echo "no set '$1' in $APACHE_KIT_DIR/poms (there are: $(cd "$APACHE_KIT_DIR/poms" && ls | sed 's/\.xml$//' | tr '\n' ' '))" >&2
        return 1
    fi
    echo "$pom"
}

# apache_lib SET: the directory of a set's jars; fails when setup.sh has not copied them.
apache_lib() {
    local lib="$APACHE_CACHE/$1/lib"
    if [ ! -f "$APACHE_CACHE/$1/ready" ]; then
        echo "Apache RocketMQ set '$1' is not installed: run tests/apache/setup.sh $1" >&2
        return 1
    fi
    echo "$lib"
}

# apache_home SET: a ROCKETMQ_HOME for the set (4.x reads conf/logback_<role>.xml from it at start).
apache_home() {
    local home="$APACHE_CACHE/$1/home"
    if [ ! -f "$home/conf/logback_broker.xml" ]; then
        mkdir -p "$home/conf"
        for role in broker namesrv tools filtersrv; do
            cp "$APACHE_KIT_DIR/home/conf/logback.xml" "$home/conf/logback_$role.xml"
        done
    fi
    echo "$home"
}

# What JDK 9 and later need for RocketMQ's servers and clients: they reach into java.nio and sun.nio.ch
# to unmap buffers and into jdk.internal.ref for cleaners (Apache's runbroker.sh adds the same).
APACHE_JDK_OPENS=(
    --add-opens=java.base/java.nio=ALL-UNNAMED
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens=java.base/java.lang=ALL-UNNAMED
    --add-opens=java.base/java.util=ALL-UNNAMED
    --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
    --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED
    --add-exports=java.base/sun.nio.ch=ALL-UNNAMED
)

apache_java() {
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
        echo "$JAVA_HOME/bin/java"
    else
        command -v java
    fi
}
