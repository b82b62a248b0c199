#!/bin/bash
# Issue 18, scenario 3: an exec probe that hangs forever (`sleep infinity`)
# runs as the worker's user inside the worker's cgroup (workers/NAME/
# probe-ROLE, issue 26 #10: the worker's limits hold it, and a worker that
# ptraces it gains nothing outside them), with the worker's oom_score_adj,
# is killed at its timeout each time (the worker untouched), never runs
# twice at once, and leaves no process behind. Guest time: ~40-60 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit dump_state

probe_cgroup() { echo "$ivd_workers_cgroup/workers/$1/probe-readiness"; }
sleepers() { { pgrep -f -x '/bin/sleep infinity' || true; } | wc -l; }
# read_probe_facts: while a probe runs, its uid, its cgroup as /proc names
# it and its oom_score_adj into $probe_uid, $probe_cgroup_line, $probe_adj
# (the probe's cgroup exists only during an attempt).
read_probe_facts() {
	local dir pid
	dir=$(probe_cgroup checked)
	pid=$(head -n1 "$dir/cgroup.procs" 2>/dev/null) || return 1
	[[ -n $pid ]] || return 1
	probe_uid=$(stat -c %u "/proc/$pid" 2>/dev/null) &&
		probe_cgroup_line=$(grep '^0::' "/proc/$pid/cgroup" 2>/dev/null) &&
		probe_adj=$(cat "/proc/$pid/oom_score_adj" 2>/dev/null)
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
		                  failure_threshold: 2}
	YAML
	fresh_daemon
	wait_until 300 has_events checked started 1
	# The probe runs as the worker does (its uid, its oom_score_adj), inside
	# the worker's cgroup.
	probe_uid="" probe_cgroup_line="" probe_adj=""
	wait_until 120 read_probe_facts
	local main
	main=$(main_pid checked)
	assert_eq "$(stat -c %u "/proc/$main")" "$probe_uid" "the probe runs as the worker's user"
	assert_eq "$(grep '^0::' "/proc/$main/cgroup")/probe-readiness" "$probe_cgroup_line" \
		"the probe runs inside the worker's cgroup"
	assert_eq "$(cat "/proc/$main/oom_score_adj")" "$probe_adj" "the probe has the worker's oom_score_adj"
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
	assert_eq "$main" "$(main_pid checked)" "the probe's kills left the worker alone"
	systemctl stop infervisord
	assert_cmd no_sleeper_left
	assert_fails test -d "$(probe_cgroup checked)"
}
run_scenario hanging-exec-probe-leaves-nothing hanging_exec_probe_leaves_nothing
