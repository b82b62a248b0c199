#!/bin/bash
# Issue 14: when the daemon's process ends (kill -9, a crash past the
# re-execution limit, the watchdog, `systemctl restart`), systemd starts a
# new one and it adopts the workers: they live in infervisor-workers.service,
# apart from the daemon's unit, so systemd ends nothing of theirs.
#   1. kill -9: systemd restarts the daemon (a new pid); both workers keep
#      their pids and keep serving; the new daemon shows them running with
#      their uptime; a rule acts on one again, heartbeats are watched again.
#   2. the same for `systemctl restart infervisord`, and for systemd's
#      watchdog kill of a hung daemon.
#   3. a worker killed while no daemon ran is noticed (its exit status is
#      unknown: no one who could reap it watched) and restarted once.
#   4. a config change made while no daemon ran is applied as a reload.
#   5. `systemctl stop` after an adoption leaves nothing behind: no worker,
#      no cgroup, no workers' unit, no runtime dir.
# "While no daemon runs": the daemon is frozen (SIGSTOP), things happen,
# then it is killed (SIGKILL), so it never sees them.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
source "${BASH_SOURCE[0]%/*}/../adoption.sh"
at_exit systemctl stop infervisord
at_exit dump_state

daemon_replaced() { # OLD_PID
	local now
	now=$(daemon_pid)
	[[ $now != 0 && $now != "$1" ]] && service_active
}

# kill_frozen_daemon: the frozen daemon (freeze_daemon) is killed; systemd
# starts a new one.
kill_frozen_daemon() {
	kill -KILL "$frozen"
	wait_until 300 daemon_replaced "$frozen"
}

kill_9_keeps_the_workers() {
	start_serving
	local old
	old=$(daemon_pid)
	kill -9 "$old"
	wait_until 300 daemon_replaced "$old"
	assert_eq 1 "$(systemctl show -P NRestarts infervisord)" "systemd restarted the daemon once"
	assert_eq active "$(systemctl is-active "$ivd_workers_unit")" "the workers' unit"
	adopted_and_supervised_again
	assert_contains "$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat)" "workers of an earlier daemon are still running"
	# Only the new daemon is in its unit's cgroup (nothing of the old one's).
	assert_eq "$(daemon_pid)" "$(cat "$ivd_service_cgroup/cgroup.procs")" "the daemon's unit's cgroup"
}
run_scenario kill-9-of-the-daemon-keeps-the-workers-serving kill_9_keeps_the_workers

restart_keeps_the_workers() {
	start_serving
	local old
	old=$(daemon_pid)
	systemctl restart infervisord
	wait_until 300 daemon_replaced "$old"
	assert_contains "$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat)" "SIGTERM for a restart"
	adopted_and_supervised_again
}
run_scenario systemctl-restart-keeps-the-workers-serving restart_keeps_the_workers

watchdog_dropin=/run/systemd/system/infervisord.service.d/vmtest-watchdog.conf
remove_watchdog_dropin() {
	rm -f "$watchdog_dropin"
	systemctl daemon-reload
}

# A hung daemon (SIGSTOP) stops feeding the watchdog; systemd aborts it,
# then kills it, and starts a new one. (Shorter than the unit's 30s and
# 2min, so that the scenario does not wait for them.)
watchdog_kill_keeps_the_workers() {
	mkdir -p "${watchdog_dropin%/*}"
	printf '[Service]\nWatchdogSec=6s\nTimeoutAbortSec=3s\n' >"$watchdog_dropin"
	at_exit remove_watchdog_dropin
	systemctl daemon-reload
	start_serving
	freeze_daemon
	wait_until 300 daemon_replaced "$frozen"
	assert_contains "$(journalctl -q --no-pager --cursor="$ivd_cursor" -u infervisord -o cat)" "Watchdog timeout"
	adopted_and_supervised_again
	remove_watchdog_dropin
}
run_scenario a-watchdog-kill-of-the-daemon-keeps-the-workers-serving watchdog_kill_keeps_the_workers

worker_killed_while_down_restarts_once() {
	start_serving
	freeze_daemon
	kill -9 "$pid_one"
	wait_until 60 process_gone "$pid_one"
	kill_frozen_daemon
	wait_until 300 has_events two adopted 1
	wait_until 300 has_events one ready 2
	assert_eq 2 "$(event_count one started)" "one's starts"
	# Its parent was the killed daemon: nobody who watched could reap it.
	assert_eq 1 "$(event_field one exited WHILE_UNSUPERVISED)" "one's exit while down"
	assert_contains "$(ivd_journal INFERVISOR_WORKER=one INFERVISOR_EVENT=exited -o cat)" "while the supervisor was down"
	assert_contains "$(ivd_journal INFERVISOR_WORKER=one INFERVISOR_EVENT=exited -o cat)" "unknown"
	assert_eq 0 "$(event_count one adopted)" "one's adoptions"
	assert_eq 1 "$(worker_pids one | wc -l)" "one's processes"
	assert_ne "$pid_one" "$(worker_pids one)" "one's new pid"
	assert_eq "$pid_two" "$(worker_pids two)" "two's processes"
	assert_eq 1 "$(status_field one restarts)" "one's restarts"
}
run_scenario worker-killed-while-no-daemon-runs-restarts-once worker_killed_while_down_restarts_once

run_scenario config-change-while-no-daemon-runs-applies-as-a-reload config_change_while_down_is_applied kill_frozen_daemon

stop_after_adoption_leaves_nothing() {
	start_serving
	local old
	old=$(daemon_pid)
	kill -9 "$old"
	wait_until 300 daemon_replaced "$old"
	wait_until 300 has_events one adopted 1
	wait_until 300 has_events two adopted 1
	systemctl stop infervisord
	assert_eq inactive "$(systemctl is-active infervisord || true)" "service state"
	assert_eq 1 "$(event_count one stopped)" "one's stops"
	assert_eq 1 "$(event_count two stopped)" "two's stops"
	wait_until 60 workers_unit_gone
	assert_eq 0 "$(pgrep -fc infervisor-example-worker || true)" "example worker processes"
	assert_cmd test ! -e /run/infervisor
}
run_scenario systemctl-stop-after-an-adoption-leaves-nothing stop_after_adoption_leaves_nothing
