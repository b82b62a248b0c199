#!/bin/bash
# Issue 32: `infervisorctl drain` before a reboot, and `undrain`. Two
# workers: `counter` checkpoints cooperatively every 10 minutes (so its
# checkpoints count as working), `plain` has no checkpoints. The drain
# checkpoints counter, then stops both cleanly, and says how each went; then
# nothing starts: `infervisorctl start` fails (exit 1) saying the host is
# drained, status says so, and a restart of the daemon (not a reboot) keeps
# it drained with both stopped. `undrain` starts both again, and counter
# restores the checkpoint the drain took. An unprivileged caller may do
# neither. Checked by order and outcome, never by time. Guest time: about
# 30-60 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"

state_of() {
	local json
	json=$(infervisorctl status --json "$1") || [[ $? == 3 ]]
	jq -r '.workers[0].state' <<<"$json"
}
state_is() { [[ $(state_of "$1") == "$2" ]]; }
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

drain_and_undrain() {
	install_infervisor
	at_exit systemctl stop infervisord
	at_exit dump_state
	use_workers drain.yaml <<-YAML
		workers:
		  - name: counter
		    command: [$ivd_example_worker, --serve-interval-ms, "200"]
		    notify: true
		    memory: {max: 128M}
		    checkpoint: {interval: 10m, timeout: 1m}
		  - name: plain
		    command: [$ivd_example_worker, --serve-interval-ms, "200"]
		    memory: {max: 128M}
	YAML
	fresh_daemon
	wait_until 300 has_events counter ready 1
	wait_until 300 has_events plain ready 1
	wait_until 120 served_more_than counter 3

	assert_fails nobody infervisorctl drain
	local out
	out=$(infervisorctl drain)
	log "drain: $out"
	assert_contains "$out" "counter: checkpointed, then stopped"
	assert_contains "$out" "plain: stopped"
	assert_contains "$out" "The host is drained"
	assert_eq "infervisorctl drain" "$(event_field counter checkpoint-written TRIGGER)" "the drain's checkpoint"
	assert_cmd state_is counter stopped
	assert_cmd state_is plain stopped
	assert_eq 0 "$(event_field plain exited EXIT_CODE | tail -n1)" "a clean stop"
	assert_file_contains /run/infervisor/drained "up counter"

	local refused rc=0
	refused=$(infervisorctl start plain 2>&1) || rc=$?
	assert_eq 1 "$rc" "start while drained"
	assert_contains "$refused" "the host is drained"
	assert_eq true "$(infervisorctl status --json | jq -r .drained)" "status --json says drained"
	assert_contains "$(infervisorctl status)" "The host is drained"

	# A restart of the daemon (not a reboot) stays drained.
	systemctl restart infervisord
	wait_until 120 service_active
	assert_eq true "$(infervisorctl status --json | jq -r .drained)" "still drained after a daemon restart"
	assert_cmd state_is counter stopped
	assert_cmd state_is plain stopped
	assert_eq 1 "$(event_count counter started)" "nothing started"

	assert_fails nobody infervisorctl undrain
	out=$(infervisorctl undrain)
	log "undrain: $out"
	assert_contains "$out" "starting counter"
	assert_contains "$out" "starting plain"
	wait_until 300 has_events counter ready 2
	wait_until 300 has_events plain ready 2
	assert_eq 1 "$(event_count counter checkpoint-restoring)" "counter restored the drain's checkpoint"
	assert_eq false "$(infervisorctl status --json | jq -r .drained)" "not drained"
	assert_fails test -e /run/infervisor/drained
}
run_scenario drain-checkpoints-stops-and-undrain-restarts drain_and_undrain
