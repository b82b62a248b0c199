#!/bin/bash
# Issue 18, scenario 2: the seeds' infinite loop. A worker serves, then spins
# so that its health endpoint stops answering (its kernel still accepts the
# connection); the HTTP liveness probe fails three times in a row, the
# worker is killed and restarted, and the journal says which probe failed
# how. Then `infervisorctl simulate` replays the run to the daemon's own
# decisions (what_if_agrees). Guest time: ~60-90 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit dump_state

liveness_kills_a_hang() {
	install_infervisor
	use_workers probe-hang.yaml <<-YAML
		workers:
		  - name: spinner
		    command: [$ivd_example_worker, --http-port, "18121", --spin-after-ms, "8000"]
		    memory: {max: 64M}
		    restart: {policy: on-failure, backoff_initial: 1s}
		    probes:
		      startup: {kind: http, port: 18121, path: /health, interval: 1s, timeout: 500ms}
		      liveness: {kind: http, port: 18121, path: /health, interval: 3s, timeout: 2s,
		                 failure_threshold: 3}
	YAML
	fresh_daemon
	wait_until 300 has_events spinner ready 1
	wait_until 300 has_events spinner probe-failed 1
	assert_eq liveness "$(event_field spinner probe-failed PROBE | head -n1)" "the liveness probe acted"
	local detail
	detail=$(event_field spinner probe-failed PROBE_DETAIL | head -n1)
	assert_contains "$detail" "no answer within 2s" "it says how the probe failed"
	assert_contains "$(ivd_journal INFERVISOR_WORKER=spinner INFERVISOR_EVENT=probe-failed -o cat | head -n1)" \
		"GET http://127.0.0.1:18121/health" "it names the probe's target"
	assert_eq 3 "$(event_field spinner probe-failed PROBE_STREAK | head -n1)" "three in a row"
	wait_until 300 has_events spinner started 2
	wait_until 300 has_events spinner ready 2
	local sequence
	sequence=$(event_sequence spinner)
	log "events: $sequence"
	[[ $sequence == "started probe-changed ready probe-changed probe-changed probe-failed exited restarting started probe-changed ready"* ]] ||
		fail "unexpected event order: $sequence"
	assert_contains "$(event_field spinner exited EXIT_REASON | head -n1)" \
		"killed: liveness probe failed 3 times in a row" "the exit reason names the probe"
	assert_contains "$(infervisorctl show spinner)" "killed: liveness probe failed" "show's last exit"
	what_if_agrees spin
}
run_scenario liveness-probe-kills-a-hang liveness_kills_a_hang
