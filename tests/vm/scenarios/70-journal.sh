#!/bin/bash
# Issue 3, scenario 7: `journalctl -u infervisord INFERVISOR_WORKER=NAME`
# shows that worker's lifecycle events with their MESSAGE_IDs; the worker's
# own output is in the journal too.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit dump_state

journal_tells_the_story() {
	install_infervisor
	use_workers journal.yaml <<-YAML
		workers:
		  - name: talker
		    command: [$ivd_example_worker, --serve-interval-ms, "300", --crash-after-ms, "3000", --exit-code, "7"]
		    notify: true
		    memory: {max: 64M}
		    restart: {policy: on-failure, backoff_initial: 1s, start_limit_burst: 2, start_limit_interval: 10m}
	YAML
	fresh_daemon
	wait_until 600 has_events talker failed 1
	systemctl stop infervisord
	local export
	export=$(ivd_journal INFERVISOR_WORKER=talker -o export)
	local id
	# started, ready, exited, restarting, failed
	for id in 49af6f06d2a446dd9d95dbde24ddfed4 a7e637663751456f95f17a1b9cfa3d6e \
		3c522bde54484e4884fa081dc0e62db4 f5ec5743703e4b2680236447a234cf4c \
		bc6226da57e64b7a9175c6a4d81d056e; do
		assert_contains "$export" "MESSAGE_ID=$id" "MESSAGE_ID $id"
	done
	assert_contains "$export" "INFERVISOR_EXIT_CODE=7" "exit code field"
	assert_contains "$(ivd_journal INFERVISOR_WORKER=talker -o cat)" "talker: exited with code 7" "exited message"
	# The catalog explains the event (journalctl -x).
	assert_contains "$(ivd_journal INFERVISOR_EVENT=failed -x)" "infervisorctl start talker" "catalog text"
	# The worker's own output, under its identifier.
	assert_contains "$(journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-talker -o cat)" "served request" "worker output"
}
run_scenario journal-shows-lifecycle-with-message-ids-and-output journal_tells_the_story
