#!/usr/bin/env bash
# Apache's mqadmin (rocketmq-tools' MQAdminStartup) of a set: tests/apache/mqadmin.sh SET COMMAND [ARGS...]
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
set_name=${1:?usage: mqadmin.sh SET COMMAND [ARGS...]}
shift
home=$(apache_home "$set_name")
# Its log (4.x: $ROCKETMQ_HOME/conf/logback_tools.xml; 5.x: the jar's) goes under a private user.home.
export ROCKETMQ_HOME="$home"
export JAVA_OPT_EXT="${JAVA_OPT_EXT:-} -Drocketmq.home.dir=$home -Duser.home=$home -Drocketmq.log.role=tools"
exec "$(dirname "$0")/java.sh" "$set_name" org.apache.rocketmq.tools.command.MQAdminStartup "$@"
