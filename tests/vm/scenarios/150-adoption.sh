#!/bin/bash
# Issue 14: a daemon upgrade or crash never costs the workers their loaded
# models. The daemon re-executes in place (same pid, same cgroup: systemd
# kills nothing) on SIGUSR2 (upgrades) and on a fatal signal (a crash), and
# the new image adopts the workers (infervisord(8), ADOPTION).
#   1. a crash (SIGSEGV): the daemon re-executes; both workers keep their
#      pids and keep serving; the new image shows them running with their
#      uptime; a rule acts on one again, heartbeats are watched again.
#   2. the same for an upgrade: SIGUSR2, as the package's postinst sends it.
#   3. a worker killed while no image watched is noticed and restarted once.
#   4. a config change made while no image watched is applied as a reload.
#   5. a state file a newer infervisor wrote (a downgrade) keeps the worker.
#   6. `systemctl stop` after an adoption still leaves nothing behind.
# "While no image watches": the daemon is frozen (SIGSTOP), things happen,
# then its main thread gets SIGSEGV and SIGCONT: the crash handler runs
# first and re-executes, so the old image never sees what happened.
# (When the daemon's process ends instead, `kill -9`, a restart: 151.)
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
source "${BASH_SOURCE[0]%/*}/../adoption.sh"
at_exit systemctl stop infervisord
at_exit dump_state

# reexecuted N: the daemon said N times that it re-executed (same pid).
reexecuted() {
	local n
	n=$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat | grep -c "re-executed in place" || true)
	((n >= $1))
}

crash_keeps_the_workers() {
	start_serving
	local pid
	pid=$(daemon_pid)
	kill -SEGV "$pid"
	wait_until 300 reexecuted 1
	assert_eq "$pid" "$(daemon_pid)" "the daemon's pid (re-executed in place)"
	assert_eq 0 "$(systemctl show -P NRestarts infervisord)" "systemd restarts"
	adopted_and_supervised_again
}
run_scenario a-crash-re-executes-and-keeps-the-workers-serving crash_keeps_the_workers

upgrade_keeps_the_workers() {
	start_serving
	local pid
	pid=$(daemon_pid)
	systemctl kill --kill-whom=main --signal=SIGUSR2 infervisord
	wait_until 300 reexecuted 1
	assert_eq "$pid" "$(daemon_pid)" "the daemon's pid (re-executed in place)"
	assert_contains "$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat)" "re-executed in place (upgrade"
	adopted_and_supervised_again
}
run_scenario an-upgrade-re-executes-and-keeps-the-workers-serving upgrade_keeps_the_workers

# The SIGSEGV goes to the main thread (tgkill), which sits in the event loop:
# on SIGCONT its handler runs before the loop sees anything. (A process-wide
# kill could land on another thread while the loop goes on for a moment.)
crash_frozen_daemon() {
	python3 -c 'import ctypes, sys; pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(234, pid, pid, 11) == 0 else 1)' "$frozen" # tgkill(pid, pid, SIGSEGV)
	kill -CONT "$frozen"
	wait_until 300 reexecuted 1
}

worker_killed_while_down_restarts_once() {
	start_serving
	freeze_daemon
	kill -9 "$pid_one"
	wait_until 60 process_gone "$pid_one"
	crash_frozen_daemon
	wait_until 300 has_events two adopted 1
	wait_until 300 has_events one ready 2
	assert_eq 2 "$(event_count one started)" "one's starts"
	# The re-executed daemon is still its parent: the status is known.
	assert_eq SIGKILL "$(event_field one exited EXIT_SIGNAL)" "one's exit signal"
	assert_eq 1 "$(event_field one exited WHILE_UNSUPERVISED)" "one's exit while down"
	assert_contains "$(ivd_journal INFERVISOR_WORKER=one INFERVISOR_EVENT=exited -o cat)" \
		"killed by SIGKILL while the supervisor was down"
	assert_eq 0 "$(event_count one adopted)" "one's adoptions"
	assert_eq 1 "$(worker_pids one | wc -l)" "one's processes"
	assert_ne "$pid_one" "$(worker_pids one)" "one's new pid"
	assert_eq "$pid_two" "$(worker_pids two)" "two's processes"
	assert_eq 1 "$(status_field one restarts)" "one's restarts"
}
run_scenario worker-killed-while-the-daemon-is-down-restarts-once worker_killed_while_down_restarts_once

run_scenario config-change-while-the-daemon-is-down-applies-as-a-reload config_change_while_down_is_applied crash_frozen_daemon

# A package downgrade: the state file was written by a newer infervisor whose
# format this one cannot read (issue 24). The run is adopted from its cgroup,
# with its pid, and keeps serving; nothing is killed or started again.
unreadable_state_file_keeps_the_worker() {
	start_serving
	freeze_daemon
	printf 'infervisor-worker-state 2\nname=one\nstate=serving\n' >/run/infervisor/state/one
	crash_frozen_daemon
	wait_until 300 has_events one adopted 1
	wait_until 300 has_events two adopted 1
	assert_contains "$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat)" \
		"one: cannot read its state file"
	assert_eq "$pid_one" "$(worker_pids one)" "one's processes"
	assert_eq "$pid_one" "$(event_field one adopted PID)" "one's adopted pid"
	assert_eq 1 "$(event_count one started)" "one's starts"
	assert_eq 0 "$(event_count one exited)" "one's exits"
	assert_eq 0 "$(event_count one leftover-reaped)" "one's reaps"
	local served
	served=$(served_count one)
	wait_until 120 served_more_than one $((served + 2))
	assert_eq running "$(status_field one state)" "one's state"
	# This daemon's own state file replaced the unreadable one.
	assert_contains "$(head -1 /run/infervisor/state/one)" "infervisor-worker-state 1"
	# `events` has what start-up did before daemon-started (issue 27, point
	# 10), and `events NAME` only that worker's.
	local events first
	events=$(infervisorctl --no-pager events)
	first=$(grep -o -m1 -E 'one adopted|daemon-started' <<<"$events")
	assert_eq "one adopted" "$first" "the first of adopted and daemon-started in events"
	assert_eq 0 "$(infervisorctl --no-pager events one | grep -c ' two ' || true)" "two's lines in events one"
}
run_scenario a-state-file-it-cannot-read-keeps-the-worker-serving unreadable_state_file_keeps_the_worker

stop_after_adoption_leaves_nothing() {
	start_serving
	kill -SEGV "$(daemon_pid)"
	wait_until 300 reexecuted 1
	wait_until 300 has_events one adopted 1
	wait_until 300 has_events two adopted 1
	systemctl stop infervisord
	assert_eq inactive "$(systemctl is-active infervisord || true)" "service state"
	assert_eq 0 "$(pgrep -fc infervisor-example-worker || true)" "example worker processes"
	assert_cmd test ! -e "$ivd_workers_cgroup/workers"
	assert_cmd test ! -e /run/infervisor
	assert_eq 1 "$(event_count one stopped)" "one's stops"
	assert_eq 1 "$(event_count two stopped)" "two's stops"
}
run_scenario systemctl-stop-after-an-adoption-leaves-nothing stop_after_adoption_leaves_nothing
