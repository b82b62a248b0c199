#!/bin/bash
# Issue 3, scenario 4: `systemctl reload` with a changed config restarts only
# the changed worker; an invalid config is rejected and the running workers
# are untouched. `infervisorctl reload --dry-run` says what a reload would
# change (or the errors) and applies nothing (issue 27, point 13).
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
	local out code=0
	out=$(infervisorctl reload --dry-run 2>&1) || code=$?
	assert_eq 0 "$code" "reload --dry-run exit code"
	assert_contains "$out" "would change changing" "dry run names the changed worker"
	assert_contains "$out" "dry run: nothing was applied" "dry run says so"
	assert_fails grep -q "would change steady" <<<"$out"
	assert_eq 0 "$(ivd_journal INFERVISOR_EVENT=config-reloaded -o cat | grep -c . || true)" \
		"no reload after a dry run"
	assert_eq "$changing_pid" "$(main_pid changing)" "changing pid after a dry run"

	systemctl reload infervisord
	wait_until 300 has_events changing ready 2
	assert_eq 1 "$(event_count steady started)" "steady starts"
	assert_eq "$steady_pid" "$(main_pid steady)" "steady pid"
	assert_ne "$changing_pid" "$(main_pid changing)" "changing pid"
	assert_contains "$(tr '\0' ' ' <"/proc/$(main_pid changing)/cmdline")" "700" "new command line"

	# Invalid: memory.high above memory.max. Rejected, nothing restarts.
	changing_pid=$(main_pid changing)
	two_workers 700 512M
	code=0
	out=$(infervisorctl reload --dry-run 2>&1) || code=$?
	assert_eq 1 "$code" "reload --dry-run of an invalid config"
	assert_contains "$out" "reload.yaml:5:5: worker 'steady': memory.high (512M) is above memory.max (128M)" "dry run error"
	assert_eq 0 "$(ivd_journal INFERVISOR_EVENT=config-rejected -o cat | grep -c . || true)" \
		"a dry run rejects nothing"
	systemctl reload infervisord
	wait_until 300 eval '(($(ivd_journal INFERVISOR_EVENT=config-rejected -o cat | grep -c . || true) >= 1))'
	assert_contains "$(ivd_journal -o cat)" "reload.yaml:5:5: worker 'steady': memory.high (512M) is above memory.max (128M)" "error with file:line:col"
	assert_eq "$steady_pid" "$(main_pid steady)" "steady pid after rejected reload"
	assert_eq "$changing_pid" "$(main_pid changing)" "changing pid after rejected reload"
	assert_cmd kill -0 "$steady_pid"
	assert_cmd kill -0 "$changing_pid"
	assert_eq "$daemon_pid" "$(systemctl show -P MainPID infervisord)" "daemon pid"
	assert_eq active "$(systemctl is-active infervisord || true)" "service state"
}
run_scenario reload-restarts-only-changed-workers-and-rejects-invalid-config reload_restarts_only_changed_workers
