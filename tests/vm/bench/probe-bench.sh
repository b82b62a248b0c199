#!/bin/bash
# Probe benchmark, run in the VM guest: the daemon's CPU (utime+stime of
# /proc/PID/stat over S seconds, as % of one core) and memory while it
# supervises N idle example workers (each with its HTTP health endpoint),
# once without probes, once with an HTTP liveness and readiness probe on
# every worker every second, and once with a TCP liveness probe every second.
# Reports figures; asserts nothing.
#
#   tests/vm/run-vm --build-dir BUILD --results DIR -- \
#       tests/vm/bench/probe-bench.sh [--workers 50] [--seconds 60]
#
# Writes the table to $VMTEST_RESULTS/probe-bench.txt (and stdout).
set -uo pipefail
here=${BASH_SOURCE[0]%/*}
# shellcheck source=../lib.sh
VMTEST_LIB_FUNCTIONS_ONLY=1 source "$here/../lib.sh"
# shellcheck source=../infervisor.sh
source "$here/../infervisor.sh"

workers=50 seconds=60
while (($#)); do
	case $1 in
	--workers) workers=${2:?}; shift ;;
	--seconds) seconds=${2:?}; shift ;;
	*) echo "probe-bench: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
out=${VMTEST_RESULTS:-/tmp}
_vmtest_state=$(mktemp -d)
trap 'systemctl stop infervisord 2>/dev/null; rm -f "$ivd_conf"/workers.d/*.yaml; rm -rf "$_vmtest_state"' EXIT

proc_cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
status_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
running_count() { ivd_journal INFERVISOR_EVENT=ready -o cat | grep -c . || true; }
all_ready() { (($(running_count) >= $1)); }

probes_for() { # MODE PORT
	case $1 in
	none) ;;
	http) echo "    probes:"
	      echo "      readiness: {kind: http, port: $2, path: /health, interval: 1s, timeout: 900ms}"
	      echo "      liveness: {kind: http, port: $2, path: /health, interval: 1s, timeout: 900ms}" ;;
	tcp) echo "    probes:"
	     echo "      liveness: {kind: tcp, port: $2, interval: 1s, timeout: 900ms}" ;;
	esac
}

bench() { # MODE
	local mode=$1 i daemon t0 t1 c0 c1 hz attempts
	{
		echo "workers:"
		for ((i = 1; i <= workers; i++)); do
			echo "  - name: idle-$i"
			echo "    command: [$ivd_example_worker, --serve-interval-ms, \"3600000\", --http-port, \"$((19000 + i))\"]"
			echo "    memory: {max: 64M}"
			probes_for "$mode" $((19000 + i))
		done
	} | use_workers bench.yaml
	fresh_daemon || return 1
	wait_until 1200 all_ready "$workers" || return 1
	sleep 5
	daemon=$(systemctl show -P MainPID infervisord)
	hz=$(getconf CLK_TCK)
	t0=$(uptime_s) c0=$(proc_cpu_ticks "$daemon")
	sleep "$seconds"
	t1=$(uptime_s) c1=$(proc_cpu_ticks "$daemon")
	attempts=$(infervisorctl status --json | grep -o '"failures":[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }')
	printf '%-6s %8s %8s %8s %10s %8s\n' "$mode" "$workers" \
		"$(awk -v c=$((c1 - c0)) -v hz="$hz" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", 100 * c / hz / (t1 - t0) }')" \
		"$(awk -v k="$(status_kib "$daemon" VmRSS)" 'BEGIN { printf "%.1f", k / 1024 }')" \
		"$(awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", t1 - t0 }')" "$attempts" |
		tee -a "$out/probe-bench.txt"
	systemctl stop infervisord
}

install_infervisor
printf '%-6s %8s %8s %8s %10s %8s\n' probes workers "cpu%" "rss MiB" "seconds" failures | tee "$out/probe-bench.txt"
for mode in none http tcp; do bench "$mode" || echo "# $mode: no figure" >&2; done
