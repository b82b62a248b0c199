#!/bin/bash
# Issue 3, scenario 6: `kill -9` of the daemon: systemd restarts it, and
# afterwards every configured worker runs exactly once (none lost, none
# duplicated). And a daemon whose event loop was held up for a while (here:
# SIGSTOP) says so in the journal, and a stall shorter than WatchdogSec does
# not get it killed.
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

daemon_said() { ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat | grep -qF -- "$1"; }

stalled_loop_is_logged_and_survives() {
	install_infervisor
	start_two_idle_workers stall.yaml
	local pid
	pid=$(systemctl show -P MainPID infervisord)
	# The watchdog (WatchdogSec=30s) is fed every 5s: a 12s stall makes a
	# feed late by more than its interval, and stays well inside 30s.
	kill -STOP "$pid"
	sleep 12
	kill -CONT "$pid"
	wait_until 120 daemon_said "the event loop was blocked for about"
	log "$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat | grep -F "event loop was blocked")"
	assert_eq "$pid" "$(systemctl show -P MainPID infervisord)" "the same daemon"
	assert_eq 0 "$(systemctl show -P NRestarts infervisord)" "watchdog restarts"
	assert_eq 1 "$(event_count one started)" "one's starts"
}
run_scenario stalled-event-loop-is-logged-and-a-short-stall-spares-the-daemon stalled_loop_is_logged_and_survives
