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

# apache_cds_options JAVA DIR CLASSPATH MAIN: the JVM options that map (or, in a first run, make) a
# dynamic class-data-sharing archive of MAIN on CLASSPATH in DIR; none on a JDK before 13. A JVM writes
# its archive at its exit, so the JVM that makes one is the exec'd run itself: it writes KEY.PID.part,
# and a later run (PID gone) checks that with -Xshare:on (which refuses one cut short by a kill) before
# renaming it KEY.jsa, the only name ever mapped. While a maker runs, other runs go without.
apache_cds_options() {
    local java=$1 dir=$2 cp=$3 main=$4 release major key archive part pid
    release="$(dirname "$(dirname "$(readlink -f "$java")")")/release"
    major=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$release" 2>/dev/null)
    [ -n "$major" ] && [ "$major" -ge 13 ] || return 0
    mkdir -p "$dir" 2>/dev/null || return 0
    key=$(printf '%s\n%s\n%s\n' "$java" "$cp" "$main" | sha256sum | cut -c1-16)
    archive="$dir/$key.jsa"
    # CDS's own messages are JVM log lines on stdout: kept out of what the programs print.
    local quiet="-Xlog:cds=off -Xlog:cds+dynamic=off -Xlog:class+path=off"
    if [ -f "$archive" ]; then
        echo "-XX:SharedArchiveFile=$archive $quiet"
        return 0
    fi
    # KEY.PID.making marks a maker; its archive appears as KEY.PID.part when it exits.
    for marker in "$dir/$key".*.making; do
        [ -f "$marker" ] || continue
        pid=${marker##*/}
        pid=${pid#"$key".}
        pid=${pid%.making}
        if kill -0 "$pid" 2>/dev/null; then
            return 0 # its maker still runs
        fi
        part="$dir/$key.$pid.part"
        # shellcheck disable=SC2086 # $quiet is a list of options
        if [ -f "$part" ] && "$java" -XX:SharedArchiveFile="$part" -Xshare:on $quiet -cp "$cp" -version >/dev/null 2>&1; then
            mv -f "$part" "$archive"
            rm -f "$marker"
            echo "-XX:SharedArchiveFile=$archive $quiet"
            return 0
        fi
        rm -f "$part" "$marker"
    done
    # This shell's pid is the JVM's after exec.
    : >"$dir/$key.$$.making" || return 0
    echo "-XX:ArchiveClassesAtExit=$dir/$key.$$.part $quiet"
}
