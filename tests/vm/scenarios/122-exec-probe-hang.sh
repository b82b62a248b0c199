#!/bin/bash
# Issue 18, scenario 3: an exec probe that hangs forever (`sleep infinity`)
# runs as the worker's user in its own capped cgroup (probes/NAME, with
# memory.max and pids.max), is killed at its timeout each time, never runs
# twice at once, and leaves no process behind. Guest time: ~40-60 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit dump_state

probe_cgroup() { echo "$ivd_workers_cgroup/probes/$1"; }
sleepers() { { pgrep -f -x '/bin/sleep infinity' || true; } | wc -l; }
# read_probe_facts: while a probe runs, its uid and its cgroup's caps into
# $probe_uid, $probe_memory_max, $probe_pids_max (the cgroup exists only
# during an attempt).
read_probe_facts() {
	local dir pid
	dir=$(probe_cgroup checked)
	pid=$(head -n1 "$dir/cgroup.procs" 2>/dev/null) || return 1
	[[ -n $pid ]] || return 1
	probe_uid=$(stat -c %u "/proc/$pid" 2>/dev/null) &&
		probe_memory_max=$(cat "$dir/memory.max" 2>/dev/null) &&
		probe_pids_max=$(cat "$dir/pids.max" 2>/dev/null)
}
no_sleeper_left() { ! pgrep -f -x '/bin/sleep infinity' >/dev/null; }

hanging_exec_probe_leaves_nothing() {
	install_infervisor
	use_workers probe-exec.yaml <<-YAML
		workers:
		  - name: checked
		    command: [$ivd_example_worker]
		    memory: {max: 64M}
		    probes:
		      readiness: {kind: exec, command: [/bin/sleep, infinity], interval: 3s, timeout: 1s,
		                  failure_threshold: 2, memory_max: 16M, pids_max: 4}
	YAML
	fresh_daemon
	wait_until 300 has_events checked started 1
	# The probe runs as the worker does (its uid), in its own capped cgroup.
	probe_uid="" probe_memory_max="" probe_pids_max=""
	wait_until 120 read_probe_facts
	assert_eq "$(stat -c %u "/proc/$(main_pid checked)")" "$probe_uid" "the probe runs as the worker's user"
	assert_eq 16777216 "$probe_memory_max" "probe cgroup memory.max"
	assert_eq 4 "$probe_pids_max" "probe cgroup pids.max"
	wait_until 300 has_events checked probe-changed 1
	assert_contains "$(event_field checked probe-changed PROBE_DETAIL | head -n1)" \
		"no exit within 1s; killed" "the journal says it was killed at its timeout"
	# Still loading (a readiness gate that never passed), never two at once.
	local i
	for i in 1 2 3 4 5 6; do
		(($(sleepers) <= 1)) || fail "$(sleepers) probe processes at once"
		sleep 1
	done
	assert_eq 0 "$(ready_count checked)" "never ready"
	systemctl stop infervisord
	assert_cmd no_sleeper_left
	assert_fails test -d "$(probe_cgroup checked)"
}
run_scenario hanging-exec-probe-leaves-nothing hanging_exec_probe_leaves_nothing
