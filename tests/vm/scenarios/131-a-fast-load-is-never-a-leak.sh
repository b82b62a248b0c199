#!/bin/bash
# Issue 11, scenario 2: with the SHIPPED main configuration and only a cap in
# the worker file, a worker that loads a 300 MB model as fast as the guest
# can write it is never killed: its load is `loading`, and the growth rules
# (near-the-cap, runaway-growth) judge it only once it serves. Checked for a
# worker without notify (the policy sees its memory settle) and one with
# notify (serving from READY=1). `infervisorctl status` shows the phase.
# The outcome is checked by order: both serve 20 requests after the policy
# counts them as serving, with no policy action and no exit. Guest time ~60 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

phase_of() { # WORKER: its phase as infervisorctl show --json reports it
	infervisorctl show "$1" --json | sed -n 's/.*"phase": *"\([a-z]*\)".*/\1/p' | head -n1
}

serving() { [[ $(phase_of "$1") == serving ]]; }

fast_load_is_never_killed() {
	install_infervisor
	use_workers load.yaml <<-YAML
		workers:
		  - name: plain
		    command: [$ivd_example_worker, --model-mb, "300", --serve-interval-ms, "500"]
		    memory: {max: 400M}
		  - name: notifying
		    command: [$ivd_example_worker, --model-mb, "100", --serve-interval-ms, "500"]
		    notify: true
		    memory: {max: 160M}
	YAML
	fresh_daemon
	wait_until 300 has_events plain ready 1
	log "status while plain loads: $(infervisorctl status | grep plain || true)"
	wait_until 600 serving plain
	wait_until 300 serving notifying
	local served
	served=$(served_count plain)
	wait_until 300 served_more_than plain $((served + 20))
	log "status: $(infervisorctl status)"
	for w in plain notifying; do
		assert_eq 0 "$(event_count $w policy-action)" "$w's policy actions"
		assert_eq 0 "$(event_count $w exited)" "$w's exits"
		assert_eq 1 "$(event_count $w started)" "$w's starts"
	done
	assert_cmd test "$(cat "$(worker_cgroup plain)/memory.peak")" -gt $((300 * 1048576))
	log "plain's memory.peak: $(cat "$(worker_cgroup plain)/memory.peak")"
	what_if_agrees model-load
}
run_scenario a-fast-model-load-is-never-killed-as-a-leak fast_load_is_never_killed
