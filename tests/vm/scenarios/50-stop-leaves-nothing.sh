#!/bin/bash
# Issue 3, scenario 5: `systemctl stop infervisord` leaves no worker process
# and no worker cgroup behind, also for a worker that double-forks and
# ignores SIGTERM.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit dump_state

no_example_worker_left() { ! pgrep -f infervisor-example-worker >/dev/null; }

stop_leaves_nothing() {
	install_infervisor
	use_workers stop.yaml <<-YAML
		workers:
		  - name: polite
		    command: [$ivd_example_worker]
		    memory: {max: 64M}
		  - name: stubborn
		    command: [$ivd_example_worker, --ignore-sigterm, --double-fork]
		    memory: {max: 64M}
		    stop: {timeout: 3s}
	YAML
	fresh_daemon
	wait_until 300 eval '(($(worker_pids stubborn | wc -l) >= 2))'
	wait_until 300 worker_running polite
	local orphan_pids
	orphan_pids=$(worker_pids stubborn)
	systemctl stop infervisord
	assert_eq inactive "$(systemctl is-active infervisord || true)" "service state"
	assert_cmd no_example_worker_left
	local p
	for p in $orphan_pids; do assert_fails test -d "/proc/$p"; done
	assert_fails test -d "$ivd_workers_cgroup/workers/stubborn"
	assert_fails test -d "$ivd_workers_cgroup/workers/polite"
	# The workers' unit is no longer needed, so systemd stops it: its
	# sleeping anchor ends and its cgroup goes.
	wait_until 60 workers_unit_gone
	assert_eq 1 "$(event_count stubborn stop-escalated)" "stubborn needed cgroup.kill"
	assert_eq 0 "$(event_count polite stop-escalated)" "polite stopped on SIGTERM"
	assert_eq 1 "$(event_count polite stopped)" "polite stopped event"
}
run_scenario stop-leaves-no-process-and-no-cgroup stop_leaves_nothing
