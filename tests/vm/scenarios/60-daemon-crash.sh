#!/bin/bash
# Issue 3, scenario 6: `kill -9` of the daemon: systemd restarts it, and
# afterwards every configured worker runs exactly once (none lost, none
# duplicated).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

daemon_replaced() { # OLD_PID
	local now
	now=$(systemctl show -P MainPID infervisord)
	[[ $now != 0 && $now != "$1" ]] && service_active
}

exactly_once() { # WORKER: one cgroup holding exactly one process of it
	[[ $(worker_pids "$1" | wc -l) == 1 ]]
}

crash_restart_runs_each_worker_once() {
	install_infervisor
	start_two_idle_workers crash.yaml
	local old_pid
	old_pid=$(systemctl show -P MainPID infervisord)
	kill -9 "$old_pid"
	wait_until 300 daemon_replaced "$old_pid"
	wait_until 300 has_events one ready 2
	wait_until 300 has_events two ready 2
	assert_eq 1 "$(systemctl show -P NRestarts infervisord)" "systemd restarted the service once"
	assert_cmd exactly_once one
	assert_cmd exactly_once two
	assert_eq 2 "$(pgrep -fc infervisor-example-worker || true)" "example worker processes on the host"
	assert_eq "$(systemctl show -P MainPID infervisord)" "$(cat "$ivd_service_cgroup/supervisor/cgroup.procs")" "only the new daemon in supervisor/"
}
run_scenario daemon-kill-9-restarts-and-each-worker-runs-once crash_restart_runs_each_worker_once
