#!/usr/bin/env bash
# Runs a Java program on a set's jars (setup.sh must have installed the set).
#
#   tests/apache/java.sh SET [-cp EXTRA_CLASSPATH] MAIN_CLASS [ARGS...]
#
# EXTRA_CLASSPATH (compiled test programs) comes before the set's jars. RMQ_CLIENT_LOG_DIR: where the
# client's own log goes (rocketmq.client.logRoot); JAVA_OPT_EXT: more JVM options.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
set_name=${1:?usage: java.sh SET [-cp EXTRA] MAIN [ARGS...]}
shift
lib=$(apache_lib "$set_name")
cp="$lib/*"
if [ "${1:-}" = "-cp" ]; then
    cp="$2:$cp"
    shift 2
fi
opts=(-Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${APACHE_JDK_OPENS[@]}")
if [ -n "${RMQ_CLIENT_LOG_DIR:-}" ]; then
    mkdir -p "$RMQ_CLIENT_LOG_DIR"
    opts+=("-Drocketmq.client.logRoot=$RMQ_CLIENT_LOG_DIR")
fi
java=$(apache_java)
# Class data sharing: the first run of a main class on the set's jars leaves the classes it loaded in
# an archive beside them (JDK 13+), checked once and then mapped by every later run. A JVM's start-up
# CPU about halves (mqadmin topicList: 1.0 -> 0.5 s, 2026-12-07), and the suites start hundreds of
# them (mqadmin's most). Not with an EXTRA_CLASSPATH: the JDK cannot archive with a directory of
# classes on the path, and a run that tries ends with exit status 1. APACHE_JAVA_CDS=0 turns it off.
if [ "${APACHE_JAVA_CDS:-1}" != 0 ] && [ "$cp" = "$lib/*" ] && [ -n "${1:-}" ] && [ "${1#-}" = "$1" ]; then
    # shellcheck disable=SC2207 # the options are words without spaces
    opts+=($(apache_cds_options "$java" "$APACHE_CACHE/$set_name/cds" "$cp" "$1"))
fi
# shellcheck disable=SC2086 # JAVA_OPT_EXT is a list of options
exec "$java" "${opts[@]}" ${JAVA_OPT_EXT:-} -cp "$cp" "$@"
