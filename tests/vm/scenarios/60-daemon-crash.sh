#!/bin/bash
# Issue 3, scenario 6: a daemon whose event loop was held up for a while
# (here: SIGSTOP) says so in the journal, and a stall shorter than
# WatchdogSec does not get it killed. (`kill -9` of the daemon, which once
# was here too: 151, the workers are adopted.)
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

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
