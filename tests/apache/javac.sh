#!/usr/bin/env bash
# Compiles Java sources against a set's jars: tests/apache/javac.sh SET [JAVAC_ARGS...]
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
set_name=${1:?usage: javac.sh SET [JAVAC_ARGS...]}
shift
lib=$(apache_lib "$set_name")
javac=javac
[ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/javac" ] || javac="$JAVA_HOME/bin/javac"
exec "$javac" -cp "$lib/*" "$@"
