#!/bin/sh
# promtool check metrics on the example exposition: every name, type, unit
# and HELP line as Prometheus' own linter sees it. Any warning fails.
set -eu
out=$("$1" | "$2" check metrics 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "$out"; exit 1; fi
echo "promtool check metrics: clean"
