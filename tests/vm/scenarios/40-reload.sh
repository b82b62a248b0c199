#!/bin/bash
# Issue 3, scenario 4: `systemctl reload` with a changed config restarts only
# the changed worker; an invalid config is rejected and the running workers
# are untouched.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

two_workers() { # INTERVAL_OF_B [MEMORY_HIGH_OF_A]
	use_workers reload.yaml <<-YAML
		workers:
		  - name: steady
		    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
		    notify: true
		    memory: {max: 128M, high: ${2:-100M}}
		  - name: changing
		    command: [$ivd_example_worker, --serve-interval-ms, "$1"]
		    notify: true
		    memory: {max: 128M}
	YAML
}

reload_restarts_only_changed_workers() {
	install_infervisor
	two_workers 1000
	fresh_daemon
	wait_until 300 has_events steady ready 1
	wait_until 300 has_events changing ready 1
	local steady_pid changing_pid daemon_pid
	steady_pid=$(main_pid steady)
	changing_pid=$(main_pid changing)
	daemon_pid=$(systemctl show -P MainPID infervisord)

	two_workers 700
	systemctl reload infervisord
	wait_until 300 has_events changing ready 2
	assert_eq 1 "$(event_count steady started)" "steady starts"
	assert_eq "$steady_pid" "$(main_pid steady)" "steady pid"
	assert_ne "$changing_pid" "$(main_pid changing)" "changing pid"
	assert_contains "$(tr '\0' ' ' <"/proc/$(main_pid changing)/cmdline")" "700" "new command line"

	# Invalid: memory.high above memory.max. Rejected, nothing restarts.
	changing_pid=$(main_pid changing)
	two_workers 700 512M
	systemctl reload infervisord
	wait_until 300 eval '(($(ivd_journal INFERVISOR_EVENT=config-rejected -o cat | grep -c . || true) >= 1))'
	assert_contains "$(ivd_journal -o cat)" "reload.yaml:2:5: worker 'steady': memory.high (512M) is above memory.max (128M)" "error with file:line:col"
	assert_eq "$steady_pid" "$(main_pid steady)" "steady pid after rejected reload"
	assert_eq "$changing_pid" "$(main_pid changing)" "changing pid after rejected reload"
	assert_cmd kill -0 "$steady_pid"
	assert_cmd kill -0 "$changing_pid"
	assert_eq "$daemon_pid" "$(systemctl show -P MainPID infervisord)" "daemon pid"
	assert_eq active "$(systemctl is-active infervisord || true)" "service state"
}
run_scenario reload-restarts-only-changed-workers-and-rejects-invalid-config reload_restarts_only_changed_workers
