#!/bin/bash
# Issue 14, the measurement: time from the daemon's start to all N workers
# adopted after a `kill -9` of the daemon, against the time it takes to
# start them fresh, for N = 1, 20, 100. The workers are the example worker
# (not notify: "started" is the end of a fresh start) at 16M each.
# Both are measured from the daemon's ExecMainStartTimestampMonotonic to
# the monotonic timestamp of the last `started` (fresh) or `adopted`
# (after kill -9) journal event. A measurement, not a test of speed: it
# asserts only that every worker was adopted with its pid; the figures go
# to the log and to $VMTEST_RESULTS/adoption-time.txt.
#
# Not in the default run (it takes some minutes under emulation):
#   tests/vm/run-all --build-dir BUILD_DIR --skip-selftest tests/vm/extra/152-adoption-time.sh
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

daemon_pid() { systemctl show -P MainPID infervisord; }
daemon_start_usec() { systemctl show -P ExecMainStartTimestampMonotonic infervisord; }

# last_event_usec EVENT: monotonic µs of the newest EVENT entry since the cursor.
last_event_usec() {
	ivd_journal INFERVISOR_EVENT="$1" -o export | sed -n 's/^__MONOTONIC_TIMESTAMP=//p' | sort -n | tail -n1
}

all_events() { # EVENT N
	(($(ivd_journal INFERVISOR_EVENT="$1" -o cat | grep -c . || true) >= $2))
}

daemon_replaced() { # OLD_PID
	local now
	now=$(daemon_pid)
	[[ $now != 0 && $now != "$1" ]] && service_active
}

measure() { # N
	local n=$1 i
	{
		echo "workers:"
		for ((i = 0; i < n; i++)); do
			printf '  - name: w%03d\n    command: [%s]\n    memory: {max: 16M}\n' "$i" "$ivd_example_worker"
		done
	} | use_workers adoption-time.yaml
	fresh_daemon
	wait_until 600 all_events started "$n"
	local fresh_ms=$((($(last_event_usec started) - $(daemon_start_usec)) / 1000))
	local pids_before old
	pids_before=$(cat "$ivd_workers_cgroup"/workers/*/cgroup.procs | sort -n)
	old=$(daemon_pid)
	kill -9 "$old"
	wait_until 300 daemon_replaced "$old"
	wait_until 600 all_events adopted "$n"
	local adopt_ms=$((($(last_event_usec adopted) - $(daemon_start_usec)) / 1000))
	assert_eq "$pids_before" "$(cat "$ivd_workers_cgroup"/workers/*/cgroup.procs | sort -n)" "the workers' pids after the adoption"
	assert_eq "$n" "$(ivd_journal INFERVISOR_EVENT=started -o cat | grep -c . || true)" "starts (none after the adoption)"
	log "N=$n: fresh start to all started ${fresh_ms} ms; after kill -9, daemon start to all adopted ${adopt_ms} ms"
	echo "N=$n fresh_ms=$fresh_ms adopt_ms=$adopt_ms" >>"$VMTEST_RESULTS/adoption-time.txt"
	systemctl stop infervisord
}

adoption_time() {
	install_infervisor
	measure 1
	measure 20
	measure 100
}
run_scenario adoption-time-against-a-fresh-start adoption_time
